#include "support/run.hpp"

#include "process/proc_stat.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <cerrno>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace goscope::test {

std::string fixture(const std::string& name, const std::string& variant) {
  return std::string(GOSCOPE_FIXTURE_DIR) + "/" + variant + "/" + name;
}
std::string fixtureDir() { return GOSCOPE_FIXTURE_DIR; }
std::string sourceDir() { return GOSCOPE_SOURCE_DIR; }
std::string cliPath() { return GOSCOPE_CLI; }
std::string examplesDir() { return GOSCOPE_EXAMPLES_DIR; }

static std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A finished command's result from its wait status and the two files its
// stdout and stderr went to (removed here).
static CommandResult collect(int status, const char* outPath, const char* errPath) {
  CommandResult r;
  if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exitCode = 128 + WTERMSIG(status);
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  unlink(outPath);
  unlink(errPath);
  return r;
}

CommandResult run(const std::string& cmd) {
  char outTmpl[] = "/tmp/goscope-test-out-XXXXXX";
  char errTmpl[] = "/tmp/goscope-test-err-XXXXXX";
  int o = mkstemp(outTmpl), e = mkstemp(errTmpl);
  close(o);
  close(e);
  std::string full = "( " + cmd + " ) >" + outTmpl + " 2>" + errTmpl + " </dev/null";
  return collect(std::system(full.c_str()), outTmpl, errTmpl);
}

CommandResult runCli(const std::string& args) { return run(cliPath() + " " + args); }

// A seccomp filter that fails ptrace(2) with EPERM (as a Yama scope of 3, or
// a container's profile, would), every other call allowed.
static bool refusePtrace() {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

CommandResult runCliWithoutPtrace(const std::string& args) {
  char outTmpl[] = "/tmp/goscope-test-out-XXXXXX";
  char errTmpl[] = "/tmp/goscope-test-err-XXXXXX";
  int o = mkstemp(outTmpl), e = mkstemp(errTmpl);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(o, 1);
    dup2(e, 2);
    if (!refusePtrace()) _exit(126);
    const std::string cmd = cliPath() + " " + args;
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(o);
  close(e);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return collect(status, outTmpl, errTmpl);
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

Child::Child(const std::vector<std::string>& argv, bool captureStdout) {
  int fds[2] = {-1, -1};
  if (captureStdout && pipe2(fds, O_CLOEXEC) != 0) return;
  // Returns once the child has exec'd (its end of this pipe closes then):
  // a test that hands pid() to goscope at once must not find the test
  // binary itself there ("not a Go program"), as one did under load.
  int execFds[2] = {-1, -1};
  if (pipe2(execFds, O_CLOEXEC) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    if (captureStdout) dup2(fds[1], 1);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    if (!captureStdout) dup2(devnull, 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(execFds[1]);
  if (pid_ > 0) {
    char c;
    while (read(execFds[0], &c, 1) < 0 && errno == EINTR) {
    }
  }
  close(execFds[0]);
  if (captureStdout) {
    close(fds[1]);
    outFd_ = fds[0];
  }
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (outFd_ >= 0) close(outFd_);
}

bool Child::alive() {
  if (pid_ <= 0) return false;
  int status;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    status_ = status;
    return false;
  }
  return true;
}

int Child::waitExit(int timeoutMs) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  while (alive()) {
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

bool Child::readLine(std::string& line, int timeoutMs) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || outFd_ < 0) return false;
    pollfd p{outFd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char tmp[4096];
    ssize_t n = read(outFd_, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
  }
}

pid_t spawnCli(const std::vector<std::string>& args, int outFd, int errFd, bool ownProcessGroup) {
  pid_t p = ::fork();
  if (p == 0) {
    if (ownProcessGroup) ::setpgid(0, 0);
    ::dup2(outFd, 1);
    ::dup2(errFd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    std::vector<std::string> full = {cliPath()};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return p;
}

double cpuSeconds(pid_t pid) {
  // The process's CPU clock counts nanoseconds; /proc/PID/stat's clock
  // ticks (10 ms) are 10% of a 100 ms window, and are the fallback only.
  clockid_t clock;
  timespec ts{};
  if (::clock_getcpuclockid(pid, &clock) == 0 && ::clock_gettime(clock, &ts) == 0)
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  const auto stat = goscope::readProcStat(pid);
  if (!stat || stat->field(15).empty()) return -1;
  return static_cast<double>(stat->number(14) + stat->number(15)) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

bool pinToCpu(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  std::error_code ec;
  bool all = true, any = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    if (::sched_setaffinity(tid, sizeof set, &set) == 0)
      any = true;
    else if (errno != ESRCH)  // a thread that just ended
      all = false;
  }
  return any && all && !ec;
}

PrivateCopy::PrivateCopy(const std::string& file) {
  char dir[] = "/tmp/goscope-copy-XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  dir_ = dir;
  path_ = dir_ + "/" + std::filesystem::path(file).filename().string();
  std::filesystem::copy_file(file, path_);  // keeps the mode: an executable stays one
}

PrivateCopy::~PrivateCopy() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string slurpFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace goscope::test
