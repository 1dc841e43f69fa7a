#include "cli/goscope_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace goscope::cli {

namespace {

// This executable, opened once: each child runs the same file even if the
// path is replaced meanwhile (an upgrade under a running server).
int selfFd() {
  static const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  return fd;
}

}  // namespace

Result<GoscopeChild> GoscopeChild::start(const std::vector<std::string>& args) {
  const int self = selfFd();
  if (self < 0) return fail(ErrorKind::Internal, std::string("cannot open goscope's own executable: ") + std::strerror(errno));
  int outPipe[2], errPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0) return fail(ErrorKind::Internal, std::string("pipe: ") + std::strerror(errno));
  UniqueFd outR(outPipe[0]), outW(outPipe[1]);
  if (::pipe2(errPipe, O_CLOEXEC) != 0) return fail(ErrorKind::Internal, std::string("pipe: ") + std::strerror(errno));
  UniqueFd errR(errPipe[0]), errW(errPipe[1]);
  std::vector<std::string> words = {"goscope"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return fail(ErrorKind::Internal, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGINT);
    if (::getppid() != parent) ::_exit(127);  // the server died before the line above
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(outW.get(), 1) < 0 || ::dup2(errW.get(), 2) < 0) ::_exit(127);
    // The server's signal dispositions and mask are not the subcommand's.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::syscall(SYS_execveat, self, "", argv.data(), environ, AT_EMPTY_PATH);
    ::_exit(127);
  }
  GoscopeChild c;
  c.pid_ = pid;
  c.out_ = std::move(outR);
  c.err_ = std::move(errR);
  return c;
}

GoscopeChild::GoscopeChild(GoscopeChild&& o) noexcept
    : pid_(o.pid_), out_(std::move(o.out_)), err_(std::move(o.err_)), outPartial_(std::move(o.outPartial_)),
      errPartial_(std::move(o.errPartial_)), status_(o.status_) {
  o.pid_ = -1;
}

GoscopeChild::~GoscopeChild() {
  if (pid_ <= 0 || status_) return;
  // Ended like the command line: Ctrl-C, a grace to detach, then SIGKILL
  // (whose probes the kernel and the link holder take off: docs/reliability.md).
  interrupt();
  for (int i = 0; i < 100; i++) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill();
  wait();
}

bool GoscopeChild::readFrom(UniqueFd& fd, std::string& partial, std::vector<std::string>& lines) {
  char buf[65536];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    if (!partial.empty()) lines.push_back(std::move(partial));
    partial.clear();
    fd.reset();
    return false;
  }
  partial.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(partial.substr(start, nl - start));
  partial.erase(0, start);
  return true;
}

bool GoscopeChild::pump(std::chrono::milliseconds wait, std::vector<std::string>& out, std::vector<std::string>& err) {
  pollfd fds[2];
  nfds_t n = 0;
  if (out_.get() >= 0) fds[n++] = {out_.get(), POLLIN, 0};
  if (err_.get() >= 0) fds[n++] = {err_.get(), POLLIN, 0};
  if (n == 0) return false;
  if (::poll(fds, n, static_cast<int>(wait.count())) <= 0) return true;
  for (nfds_t i = 0; i < n; i++) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    if (fds[i].fd == out_.get()) readFrom(out_, outPartial_, out);
    else readFrom(err_, errPartial_, err);
  }
  return out_.get() >= 0 || err_.get() >= 0;
}

void GoscopeChild::interrupt() {
  if (pid_ > 0 && !status_) ::kill(pid_, SIGINT);
}

void GoscopeChild::kill() {
  if (pid_ > 0 && !status_) ::kill(pid_, SIGKILL);
}

int GoscopeChild::wait() {
  if (status_) return *status_;
  if (pid_ <= 0) return -1;
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0)
    if (errno != EINTR) return -1;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return *status_;
}

}  // namespace goscope::cli
