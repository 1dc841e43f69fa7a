#include "process/target.hpp"

#include <charconv>
#include <filesystem>

#include "process/namespaces.hpp"

namespace goscope {

std::string directoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string Target::describe() const {
  if (process) return "PID " + std::to_string(process->pid()) + " (" + process->exePath() + ")";
  return binary->name();
}

Result<Target> openBinaryTarget(const std::string& path, bool acceptTruncated) {
  auto b = GoBinary::open(path, {}, acceptTruncated);
  if (!b && b.error().kind == ErrorKind::NotFound && !path.empty() && path[0] == '/') {
    // A path that exists only inside a container: say who runs it and how
    // to name it from here (docs/containers.md).
    if (auto pids = processesRunningPathElsewhere(path); !pids.empty()) {
      const std::string p = std::to_string(pids[0]);
      std::string who = "PID " + p;
      if (pids.size() > 1) who += " (and " + std::to_string(pids.size() - 1) + (pids.size() > 2 ? "+" : "") + " more)";
      return fail(ErrorKind::NotFound,
                  path + ": no such file here; " + who + " runs it in another mount namespace (a container)",
                  "-p " + p + " probes that process, -b /proc/" + p + "/root" + path +
                      " every process that runs the same file");
    }
  }
  if (!b) return b.failure();
  if (auto d = (*b)->attachDebugInfo(debugInfoSearch(), directoryOf(path)); !d) return d.failure();
  return Target{std::move(*b), std::nullopt, 0};
}

Result<Target> openProcessTarget(pid_t pid, bool acceptTruncated) {
  auto p = Process::attach(pid);
  if (!p) return p.failure();
  std::string who = "PID " + std::to_string(pid) + " (" + p->exePath() + ")";
  auto b = GoBinary::open(p->exeHandlePath(), p->exePath(), acceptTruncated);
  if (!b) {
    const Error& e = b.error();
    if (e.message.rfind(p->exePath() + " is truncated: ", 0) == 0)
      return fail(ErrorKind::BadTarget, "PID " + std::to_string(pid) + "'s executable " + e.message, e.hint);
    if (e.kind == ErrorKind::BadTarget || e.kind == ErrorKind::NotFound) {
      std::string why = e.message;
      if (auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
      if (why.rfind("not a Go program", 0) == 0) return fail(ErrorKind::BadTarget, who + " is " + why);
      return fail(ErrorKind::BadTarget, who + " is not a Go program (" + why + ")");
    }
    return b.failure();
  }
  // The file read is the one the pinned process runs (not a later exec's,
  // nor another process's that took the PID meanwhile).
  if (auto same = p->verifyIdentity("while goscope read its executable", &(*b)->elf().identity()); !same)
    return same.failure();
  // .gnu_debuglink's directory as seen from here: the process's own path
  // when its root is ours, else through /proc/PID/root (a container's root).
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  std::error_code ec;
  const bool ourRoot = std::filesystem::equivalent(root, "/", ec);
  const std::string exeDir = (ourRoot ? "" : root) + directoryOf(p->exePath());
  if (auto d = (*b)->attachDebugInfo(debugInfoSearch(), exeDir); !d) return d.failure();
  auto bias = p->loadBias((*b)->elf());
  if (!bias) return bias.failure();
  return Target{std::move(*b), std::move(*p), *bias};
}

Result<pid_t> parsePid(const std::string& text) {
  long long v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v <= 0 || v > (1 << 22))
    return fail(ErrorKind::Usage, "-p wants a process ID, not '" + text + "'");
  return static_cast<pid_t>(v);
}

}  // namespace goscope
