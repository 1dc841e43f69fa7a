#include "backend/delve/dlv_startup.hpp"

#include "process/ptrace_privileges.hpp"

#include <charconv>

namespace goscope::delve {

namespace {

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The most telling line of dlv's stderr: the one naming the pid, else the last.
std::string keyLine(std::string_view err) {
  std::string_view best, last;
  while (!err.empty()) {
    auto nl = err.find('\n');
    std::string_view line = err.substr(0, nl);
    if (!line.empty()) {
      last = line;
      // A Go panic's first line says what; its last is a frame.
      if (line.starts_with("panic: ")) return std::string(line);
      // cobra's "Error: unknown flag: --x" comes before a page of usage.
      if (best.empty() && (has(line, "could not attach") || has(line, "Could not attach") || line.starts_with("Error: ")))
        best = line;
    }
    if (nl == std::string_view::npos) break;
    err.remove_prefix(nl + 1);
  }
  return std::string(best.empty() ? last : best);
}

// The minor version in "go1.21.5", "Go cmd/compile go1.19.8; regabi" (with
// `prefix` "go1.") or "1.18.0" (prefix "1."); nullopt without one.
std::optional<int> goMinor(std::string_view text, std::string_view prefix) {
  auto at = text.find(prefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + prefix.size());
  int minor = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), minor);
  if (ec != std::errc() || end == rest.data()) return std::nullopt;
  return minor;
}

}  // namespace

std::optional<uint16_t> parseListeningPort(std::string_view out) {
  static constexpr std::string_view kPrefix = "API server listening at: ";
  for (size_t at = out.find(kPrefix); at != std::string_view::npos; at = out.find(kPrefix, at + 1)) {
    std::string_view rest = out.substr(at + kPrefix.size());
    rest = rest.substr(0, rest.find('\n'));
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) continue;
    std::string_view digits = rest.substr(colon + 1);
    while (!digits.empty() && (digits.back() == '\r' || digits.back() == ' ')) digits.remove_suffix(1);
    unsigned port = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec == std::errc() && end == digits.data() + digits.size() && port > 0 && port < 65536) {
      return static_cast<uint16_t>(port);
    }
  }
  return std::nullopt;
}

Error classifyAttachFailure(pid_t pid, std::string_view dlvStderr) {
  const std::string line = keyLine(dlvStderr);
  const std::string p = "PID " + std::to_string(pid);
  if (has(dlvStderr, "could not open debug info")) {
    return {ErrorKind::BadTarget, "Delve cannot debug " + p + ": its binary has no DWARF debug info (stripped, or not a Go program)",
            "the BPF path works on stripped Go binaries (it reads .gopclntab); Delve needs a build without -ldflags=-s -w"};
  }
  if (has(dlvStderr, "is too old for this version of Delve") || has(dlvStderr, "Version of Delve is too old for Go version")) {
    return {ErrorKind::BadTarget, "the installed Delve refuses the Go version of " + p + ": " + line,
            "install a Delve that supports that Go version, or use the BPF path, which does not depend on it"};
  }
  // A thread that ended while dlv attached, before its turn: Delve 1.24 and
  // later fail the attach ("could not attach to new thread N no such
  // process"); 1.20.2 goes on without the threads after it, or panics when
  // none was added yet (docs/delve.md, "Threads dlv never attached"). The
  // process is there: DelveSession::attach tries again.
  if (has(dlvStderr, "could not attach to new thread") ||
      (has(dlvStderr, "panic: ") && has(dlvStderr, "nativeProcess).initialize"))) {
    return {ErrorKind::External, std::string(kThreadEndedWhileAttaching) + " " + p + ": " + line,
            "the process starts and ends threads faster than dlv attaches to them; the BPF path (goscope "
            "count/latency/trace, or --strategy bpf) does not attach to threads"};
  }
  if (has(dlvStderr, "no such process")) {
    return {ErrorKind::NotFound, "no process " + std::to_string(pid) + " (dlv: " + line + ")", {}};
  }
  if (has(dlvStderr, "operation not permitted") || has(dlvStderr, "ptrace_scope")) {
    return {ErrorKind::Permission, "dlv may not trace " + p + ": " + line,
            "run as root (or with CAP_SYS_PTRACE); a process has at most one tracer, so detach any other debugger"};
  }
  if (has(dlvStderr, "unknown flag") || has(dlvStderr, "unknown shorthand flag") || has(dlvStderr, "invalid argument")) {
    return {ErrorKind::Usage, "dlv refused an option given with --dlv-arg: " + line, "see dlv help attach"};
  }
  if (line.empty()) return {ErrorKind::External, "dlv exited before answering, without saying why", {}};
  return {ErrorKind::External, "dlv failed: " + line, {}};
}

Error explainAttachRefusal(pid_t pid, Error classified) {
  if (classified.kind != ErrorKind::Permission) return classified;
  // The up-front check passed before dlv started; if it fails now, it says
  // what changed (another tracer, named).
  if (auto now = checkPtracePrivileges(pid); !now) return now.error();
  // It still passes: nothing is missing, so the refusal came from a tracer
  // that attached and left in the meantime (ptrace allows one at a time).
  auto facts = readPtraceFacts(pid);
  if (facts && facts->tracerHasSysPtrace)
    return {ErrorKind::BadTarget,
            "dlv could not attach to PID " + std::to_string(pid) +
                " although goscope may trace it: another debugger held it at that moment (one debugger at a time)",
            "try again when the other session has ended"};
  return classified;
}

std::optional<Error> goVersionRefusal(pid_t pid, const rpc::GetVersionOut& v) {
  auto target = goMinor(v.targetGoVersion, "go1.");
  auto min = goMinor(v.minSupportedVersionOfGo, "1.");
  auto max = goMinor(v.maxSupportedVersionOfGo, "1.");
  if (!target || !min || !max || (*target >= *min && *target <= *max)) return std::nullopt;
  std::string delve = v.delveVersion.substr(0, v.delveVersion.find('\n'));  // "Version: 1.20.2"
  if (delve.starts_with("Version: ")) delve = delve.substr(9);
  std::string built = v.targetGoVersion.substr(v.targetGoVersion.find("go1."));
  built = built.substr(0, built.find_first_of("; "));
  return Error{ErrorKind::BadTarget,
               "PID " + std::to_string(pid) + " was built by " + built + ", outside what the installed Delve " + delve +
                   " supports (Go 1." + std::to_string(*min) + " to 1." + std::to_string(*max) + ")",
               "install a Delve that supports " + built +
                   ", or use the BPF path (goscope count/latency/trace), which does not depend on it"};
}

Error dlvNotFound(const std::string& tried) {
  return {ErrorKind::External, "dlv (Delve) is not installed: " + tried + " not found",
          "install it: apt-get install delve (Debian 12), scripts/toolchains.sh dlv (Delve 1.24 and 1.27, for Go "
          "1.22 to 1.27), or go install github.com/go-delve/delve/cmd/dlv@latest; --dlv PATH or GOSCOPE_DLV may name it"};
}

}  // namespace goscope::delve
