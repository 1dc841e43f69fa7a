#include "util/launched_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace goscope {

std::vector<std::string> splitCommand(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool inWord = false;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      inWord = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) out.push_back(cur);
      cur.clear();
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) out.push_back(cur);
  return out;
}

std::string joinCommand(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    if (!w.empty() && w.find_first_of(" \t\n'\"") == std::string::npos) {
      out += w;
      continue;
    }
    // splitCommand has no escapes: a word is quoted runs side by side, a '
    // inside "..." and anything else inside '...'.
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::optional<std::string> resolveProgram(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) return std::nullopt;
    char buf[PATH_MAX];
    return ::realpath(name.c_str(), buf) ? std::optional<std::string>(buf) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string cand = dirs.substr(start, end - start) + "/" + name;
    if (executable(cand)) {
      char buf[PATH_MAX];
      if (::realpath(cand.c_str(), buf)) return std::string(buf);
    }
    start = end + 1;
  }
  return std::nullopt;
}

Result<LaunchedChild> LaunchedChild::start(const std::string& command, bool stdoutToStderr) {
  auto argv = splitCommand(command);
  if (argv.empty()) return fail(ErrorKind::Usage, "-c needs a command");
  auto prog = resolveProgram(argv[0]);
  if (!prog) {
    // A file that is there but cannot be run is not "missing".
    struct stat st{};
    if (argv[0].find('/') != std::string::npos && ::stat(argv[0].c_str(), &st) == 0)
      return fail(ErrorKind::BadTarget, argv[0] + (S_ISREG(st.st_mode) ? ": not executable" : ": not a regular file"),
                  "-c runs a program: give an executable Go binary");
    return fail(ErrorKind::NotFound, argv[0] + ": no such program");
  }
  int goPipe[2], execPipe[2];
  if (::pipe2(goPipe, O_CLOEXEC) != 0 || ::pipe2(execPipe, O_CLOEXEC) != 0)
    return fail(ErrorKind::Internal, std::string("pipe: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) return fail(ErrorKind::Internal, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(goPipe[1]);
    ::close(execPipe[0]);
    char b;
    // Wait for the go-ahead; EOF (goscope died before release) means do not run.
    if (::read(goPipe[0], &b, 1) != 1) _exit(127);
    if (stdoutToStderr) ::dup2(2, 1);
    // A shell running us in the background ignores SIGINT, and we ignore
    // SIGPIPE: ignored dispositions survive exec, so give the command the
    // defaults it would have had on its own.
    for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(prog->c_str(), args.data());
    int err = errno;
    (void)!::write(execPipe[1], &err, sizeof err);
    _exit(127);
  }
  ::close(goPipe[0]);
  ::close(execPipe[1]);
  LaunchedChild c;
  c.pid_ = pid;
  c.program_ = *prog;
  c.go_ = UniqueFd(goPipe[1]);
  c.execOk_ = UniqueFd(execPipe[0]);
  return c;
}

LaunchedChild::LaunchedChild(LaunchedChild&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      program_(std::move(o.program_)),
      go_(std::move(o.go_)),
      execOk_(std::move(o.execOk_)),
      status_(o.status_) {}

LaunchedChild::~LaunchedChild() {
  if (pid_ <= 0 || status_) return;
  go_.reset();  // an unreleased child exits on EOF
  ::kill(pid_, SIGTERM);
  int st;
  ::waitpid(pid_, &st, 0);
}

Result<void> LaunchedChild::release() {
  char b = 1;
  if (::write(go_.get(), &b, 1) != 1) return fail(ErrorKind::Internal, "cannot release the child");
  go_.reset();
  int err = 0;
  ssize_t n = ::read(execOk_.get(), &err, sizeof err);
  execOk_.reset();
  if (n == static_cast<ssize_t>(sizeof err)) {
    wait();
    return fail(ErrorKind::External, program_ + ": exec failed: " + std::strerror(err));
  }
  return {};
}

Result<HeldExec> LaunchedChild::releaseFollowing(const std::function<bool(const std::string&)>& accept,
                                                 std::chrono::milliseconds timeout) {
  int status = -1;
  auto held = followToProgram(pid_, [this] { return release(); }, accept, timeout, &status);
  if (!held && status >= 0) status_ = status;  // reaped while following
  return held;
}

static int decodeStatus(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

std::optional<int> LaunchedChild::poll() {
  if (status_ || pid_ <= 0) return status_;
  int st;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) status_ = decodeStatus(st);
  return status_;
}

std::optional<int> LaunchedChild::waitFor(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

int LaunchedChild::terminate() {
  if (poll()) return *status_;
  for (auto [sig, ms] : {std::pair{SIGINT, 3000}, std::pair{SIGTERM, 3000}, std::pair{SIGKILL, 0}}) {
    ::kill(pid_, sig);
    if (sig == SIGKILL) return wait();
    if (auto st = waitFor(std::chrono::milliseconds(ms))) return *st;
  }
  return wait();
}

int LaunchedChild::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(-1);
  int st;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  status_ = decodeStatus(st);
  return *status_;
}

}  // namespace goscope
