// goscope as a child process a test controls for a long time: its stdout on
// a pipe that the test reads as it goes (an hour of trace lines never piles
// up anywhere), its stderr in a file; signalled, SIGKILLed, waited for. And
// what a dead goscope could leave behind on a target: a goscope process (the
// Delve guardian is a fork of goscope), a uprobe_multi BPF link.
// Header-only; include it from doctest test files.
#pragma once

#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/run.hpp"
#include "support/unharmed.hpp"

namespace goscope::test {


// An integer from the environment (GOSCOPE_TORTURE_SECONDS and the like).
inline long envNumber(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end && *end == 0 ? n : fallback;
}

class GoscopeProcess {
 public:
  using LineHandler = std::function<void(const std::string&)>;

  // Starts `goscope ARGS...`; every complete stdout line goes to onLine when
  // pump() or wait() reads it.
  GoscopeProcess(const std::vector<std::string>& args, LineHandler onLine = {}, bool ownProcessGroup = false)
      : onLine_(std::move(onLine)) {
    static int serial = 0;
    errPath_ = "/tmp/goscope-test-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".err";
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    int errFd = ::open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(errFd >= 0);
    start_ = std::chrono::steady_clock::now();
    pid_ = spawnCli(args, fds[1], errFd, ownProcessGroup);
    REQUIRE(pid_ > 0);
    ::close(fds[1]);
    ::close(errFd);
    outFd_ = fds[0];
    ::fcntl(outFd_, F_SETFL, O_NONBLOCK);
  }
  ~GoscopeProcess() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (outFd_ >= 0) ::close(outFd_);
    ::unlink(errPath_.c_str());
  }
  GoscopeProcess(const GoscopeProcess&) = delete;
  GoscopeProcess& operator=(const GoscopeProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string err() const { return slurpFile(errPath_); }
  double secondsSinceStart() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::chrono::steady_clock::time_point started() const { return start_; }

  // Reads whatever stdout has now and hands over its complete lines.
  void pump() {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(outFd_, buf, sizeof buf);
      if (n <= 0) break;
      partial_.append(buf, static_cast<size_t>(n));
    }
    size_t at = 0;
    for (size_t nl; (nl = partial_.find('\n', at)) != std::string::npos; at = nl + 1)
      if (onLine_) onLine_(partial_.substr(at, nl - at));
    partial_.erase(0, at);
  }

  // Not exited yet (reaps it when it has).
  bool running() {
    if (exited_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      status_ = st;
    }
    return !exited_;
  }
  void signal(int sig) {
    if (running()) ::kill(pid_, sig);
  }
  // Waits for the exit, reading stdout meanwhile; the wait status, -1 on timeout.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      pump();
      if (std::chrono::steady_clock::now() > deadline) return -1;
      pollfd p{outFd_, POLLIN, 0};
      ::poll(&p, 1, 20);
    }
    pump();
    return status_;
  }
  // SIGKILL and reap; the wait status.
  int kill() {
    signal(SIGKILL);
    return wait(std::chrono::seconds(30));
  }
  bool exitedCleanly() const { return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }

 private:
  pid_t pid_ = -1;
  int outFd_ = -1;
  std::string errPath_, partial_;
  LineHandler onLine_;
  bool exited_ = false;
  int status_ = -1;
  std::chrono::steady_clock::time_point start_;
};

inline std::vector<std::string> cmdlineOf(pid_t p) {
  const std::string cmd = procFile(p, "cmdline");
  std::vector<std::string> argv;
  for (size_t at = 0; at < cmd.size();) {
    size_t end = cmd.find('\0', at);
    argv.push_back(cmd.substr(at, end - at));
    at = end == std::string::npos ? cmd.size() : end + 1;
  }
  return argv;
}

// The parent of a process (/proc/PID/stat), 0 when it is gone.
inline pid_t parentPid(pid_t pid) {
  const std::string stat = procFile(pid, "stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  char state;
  long ppid = 0;
  rest >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// Whether a process may be one this test started: this process is among
// its ancestors, or it was orphaned (its parent is init), which says
// nothing. The goscope processes of tests running beside this one descend
// from those tests.
inline bool mayBeOurs(pid_t pid) {
  pid_t p = parentPid(pid);
  if (p == 1) return true;
  for (int depth = 0; p > 1 && depth < 64; depth++, p = parentPid(p))
    if (p == ::getpid()) return true;
  return false;
}

// Live processes running this build's goscope with `-p TARGET`: goscope
// itself, its Delve guardian or its BPF attach/detach helper (forks of it,
// with the same command line), plus any exiting goscope this test may have
// started. Other people's goscope processes have other targets.
inline std::vector<pid_t> goscopesFor(pid_t target) {
  std::vector<pid_t> out;
  std::error_code ec;
  auto cli = std::filesystem::canonical(cliPath(), ec);
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) return out;
  while (dirent* e = readdir(proc.get())) {
    pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
    if (p <= 0 || p == ::getpid()) continue;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(p) + "/exe", ec);
    if (ec) {
      // An exiting process has no exe (nor cmdline) once its memory is gone,
      // but still holds its fds, e.g. goscope's attach or detach helper
      // closing a BPF link: count any exiting goscope this test may have
      // started, whatever its target.
      if (procFile(p, "comm") == "goscope\n" && alive(p) && mayBeOurs(p)) out.push_back(p);
      continue;
    }
    if (exe != cli) continue;
    auto argv = cmdlineOf(p);
    for (size_t i = 0; i + 1 < argv.size(); i++)
      if (argv[i] == "-p" && argv[i + 1] == std::to_string(target) && alive(p)) out.push_back(p);
  }
  return out;
}

// goscope's helper processes: its children running the CLI. With the BPF
// link holder (src/backend/bpf/link_holder.hpp) that is the holder
// (`goscope __link-holder FD ...`); without it (GOSCOPE_LINK_HOLDER=off),
// the forks that create and close links while they run.
inline std::vector<pid_t> cliChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  auto cli = std::filesystem::canonical(cliPath(), ec);
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc) return out;
  while (dirent* e = readdir(proc.get())) {
    pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
    if (p <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(p) + "/exe", ec);
    if (!ec && exe == cli) out.push_back(p);
  }
  return out;
}

// Kernel log lines written since construction (/dev/kmsg), e.g. the
// kernel's "failed to unregister, leaking uprobe".
class KernelLog {
 public:
  KernelLog() : fd_(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
    if (fd_ >= 0) ::lseek(fd_, 0, SEEK_END);
  }
  ~KernelLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  KernelLog(const KernelLog&) = delete;
  KernelLog& operator=(const KernelLog&) = delete;
  bool available() const { return fd_ >= 0; }
  // The new lines that contain `what`.
  std::vector<std::string> newLines(const std::string& what) {
    std::vector<std::string> out;
    char buf[8192];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf - 1);
      if (n < 0 && errno == EPIPE) continue;  // overwritten records: go on with the next
      if (n <= 0) break;
      std::string rec(buf, static_cast<size_t>(n));
      if (rec.find(what) != std::string::npos) out.push_back(rec.substr(rec.find(';') + 1));
    }
    return out;
  }

 private:
  int fd_;
};

// Every uprobe_multi link on the machine, as the kernel tells it: its id,
// the pid it filters on (0: any), how many offsets it has and the file
// they are in (struct bpf_link_info's uprobe_multi member, Linux 6.8+,
// mirrored here because Debian 12's linux/bpf.h predates it; the path is
// asked for with a buffer of PATH_MAX).
struct UprobeMultiLink {
  uint32_t id = 0, pid = 0, offsets = 0;
  std::string path;
};
inline std::vector<UprobeMultiLink> uprobeMultiLinks() {
  constexpr uint32_t kUprobeMultiLinkType = 12;  // BPF_LINK_TYPE_UPROBE_MULTI
  struct UprobeMultiLinkInfo {
    uint32_t type, id, progId, pad;
    uint64_t path, offsets, refCtrOffsets, cookies;
    uint32_t pathSize, count, flags, pid;
  };
  std::vector<UprobeMultiLink> out;
  uint32_t id = 0;
  for (;;) {
    union bpf_attr a;
    std::memset(&a, 0, sizeof a);
    a.start_id = id;
    if (::syscall(SYS_bpf, BPF_LINK_GET_NEXT_ID, &a, sizeof a) != 0) break;
    id = a.next_id;
    std::memset(&a, 0, sizeof a);
    a.link_id = id;
    int fd = static_cast<int>(::syscall(SYS_bpf, BPF_LINK_GET_FD_BY_ID, &a, sizeof a));
    if (fd < 0) continue;  // gone meanwhile
    UprobeMultiLinkInfo info{};
    char path[4096] = "";
    info.path = reinterpret_cast<uint64_t>(path);
    info.pathSize = sizeof path;
    std::memset(&a, 0, sizeof a);
    a.info.bpf_fd = static_cast<uint32_t>(fd);
    a.info.info_len = sizeof info;
    a.info.info = reinterpret_cast<uint64_t>(&info);
    if (::syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) == 0 && info.type == kUprobeMultiLinkType)
      out.push_back({id, info.pid, info.count, path});
    ::close(fd);
  }
  return out;
}

// The ids of those whose pid filter is `target`; links of other targets
// (other people's tests) are not ours to look at.
inline std::vector<uint32_t> uprobeMultiLinksFor(pid_t target) {
  std::vector<uint32_t> out;
  for (const auto& l : uprobeMultiLinks())
    if (l.pid == static_cast<uint32_t>(target)) out.push_back(l.id);
  return out;
}

// The ids of those on the file `path` (any pid), e.g. a test's own copy of a
// binary probed with -b.
inline std::vector<uint32_t> uprobeMultiLinksOn(const std::string& path) {
  std::error_code ec;
  const auto file = std::filesystem::canonical(path, ec);
  std::vector<uint32_t> out;
  for (const auto& l : uprobeMultiLinks())
    if (!ec && l.path == file.string()) out.push_back(l.id);
  return out;
}

// For a failure's message: every uprobe_multi link on the machine (id,
// the pid it filters on, how many offsets) and every process running the
// CLI or named goscope (pid, parent, session, state, argv, the first lines
// of its kernel stack). A leftover int3 with no link of the target's and no
// goscope left was seen twice on 2026-11-25, once a kill at 49 ms; this is
// what the next one must tell.
inline std::string bpfSceneReport() {
  std::ostringstream out;
  out << "uprobe_multi links:";
  for (const auto& l : uprobeMultiLinks()) out << " [id " << l.id << " pid " << l.pid << " offsets " << l.offsets << "]";
  std::error_code ec;
  auto cli = std::filesystem::canonical(cliPath(), ec);
  out << "; goscope processes:";
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  while (dirent* e = proc ? readdir(proc.get()) : nullptr) {
    pid_t p = static_cast<pid_t>(std::atoi(e->d_name));
    if (p <= 0 || p == ::getpid()) continue;
    const std::string dir = "/proc/" + std::to_string(p);
    std::ifstream comm(dir + "/comm");
    std::string name;
    std::getline(comm, name);
    auto exe = std::filesystem::read_symlink(dir + "/exe", ec);
    if (name != "goscope" && (ec || exe != cli)) continue;
    std::ifstream statf(dir + "/stat");
    std::string stat;
    std::getline(statf, stat);
    const auto close = stat.rfind(')');
    std::string argv;
    for (const auto& a : cmdlineOf(p)) argv += " " + a;
    std::ifstream stack(dir + "/stack");
    std::string top, line;
    for (int i = 0; i < 4 && std::getline(stack, line); i++) top += " | " + line;
    out << " [" << p << (close != std::string::npos ? stat.substr(close + 1, 40) : std::string(" ?")) << " argv:" << argv
        << " stack:" << top << "]";
  }
  return out.str();
}

}  // namespace goscope::test
