#include "backend/delve/dlv_process.hpp"

#include "util/fd_passing.hpp"
#include "process/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "backend/delve/dlv_startup.hpp"
#include "backend/delve/guardian.hpp"

extern char** environ;

namespace goscope::delve {

using Clock = std::chrono::steady_clock;

Result<std::string> DlvProcess::locate(const std::string& explicitPath) {
  std::string want = explicitPath;
  if (want.empty()) {
    if (const char* env = std::getenv("GOSCOPE_DLV"); env && *env) want = env;
  }
  if (!want.empty()) {
    if (::access(want.c_str(), X_OK) == 0) return want;
    return fail(dlvNotFound(want));
  }
  // Resolved here, not by execvp in the child: after fork() in a threaded
  // process only async-signal-safe calls are allowed, and PATH search is not.
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/dlv";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return fail(dlvNotFound("dlv on $PATH"));
}

Result<std::unique_ptr<DlvProcess>> DlvProcess::spawn(const std::string& path, const std::vector<std::string>& args,
                                                      pid_t target, const FileIdentity& program) {
  std::unique_ptr<DlvProcess> p(new DlvProcess());
  p->out_.reset(::memfd_create("dlv-stdout", MFD_CLOEXEC));
  p->err_.reset(::memfd_create("dlv-stderr", MFD_CLOEXEC));
  p->report_.reset(::memfd_create("dlv-release", MFD_CLOEXEC));
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  int sv[2] = {-1, -1};
  if (!p->out_.valid() || !p->err_.valid() || !devnull.valid() ||
      ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return fail(ErrorKind::Internal, std::string("cannot set up dlv: ") + std::strerror(errno));
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);

  // Everything the children touch is prepared before fork().
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  guardian::Plan plan;
  plan.target = target;
  plan.dlvPath = path.c_str();
  plan.dlvArgv = argv.data();
  plan.envp = environ;
  plan.stdoutFd = p->out_.get();
  plan.stderrFd = p->err_.get();
  plan.nullFd = devnull.get();
  plan.controlFd = theirs.get();
  plan.reportFd = p->report_.get();
  // The program analysed, not the one running now: an exec since the
  // analysis must not become the program the guardian writes into.
  struct stat exe {};
  if (program.ino != 0) {
    plan.exeDev = program.dev;
    plan.exeIno = program.ino;
  } else if (::stat(("/proc/" + std::to_string(target) + "/exe").c_str(), &exe) == 0) {
    plan.exeDev = exe.st_dev;
    plan.exeIno = exe.st_ino;
  }
  plan.stoppedBefore = processStopped(target);
  p->target_ = target;
  p->targetStoppedBefore_ = plan.stoppedBefore;
  p->exeDev_ = plan.exeDev;
  p->exeIno_ = plan.exeIno;

  const pid_t g = ::fork();
  if (g < 0) return fail(ErrorKind::Internal, std::string("fork failed: ") + std::strerror(errno));
  if (g == 0) guardian::run(plan);
  p->guardian_ = g;
  p->control_ = std::move(ours);
  theirs.reset();

  // The guardian answers with dlv's pid at once.
  pollfd pfd{p->control_.get(), POLLIN, 0};
  char msg[16] = {};
  ssize_t n = ::poll(&pfd, 1, 5'000) == 1 ? ::recv(p->control_.get(), msg, sizeof msg, 0) : -1;
  if (n >= 1 + static_cast<ssize_t>(sizeof(pid_t)) && msg[0] == guardian::kDlvPid) {
    std::memcpy(&p->pid_, msg + 1, sizeof(pid_t));
  } else {
    int e = 0;
    if (n >= 1 + static_cast<ssize_t>(sizeof e) && msg[0] == guardian::kSpawnFailed) std::memcpy(&e, msg + 1, sizeof e);
    p->reapGuardian(Millis(1'000));
    return fail(ErrorKind::Internal, std::string("could not start dlv: ") + (e ? std::strerror(e) : "no answer"));
  }
  p->pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, p->pid_, 0)));  // -1 on old kernels: we poll instead
  spdlog::debug("delve: started dlv (pid {}) under guardian {}", p->pid_, g);
  return p;
}

DlvProcess::~DlvProcess() {
  if (!stoodDown_) handOver();
  reapGuardian(Millis(10'000));
  if (pid_ > 0 && processIsAlive(pid_)) ::kill(pid_, SIGTERM);  // last resort; never seen
}

std::string DlvProcess::readAll(int fd) {
  std::string s;
  char buf[4096];
  for (off_t off = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return s;
}

std::string DlvProcess::output() const { return out_.valid() ? readAll(out_.get()) : std::string(); }
std::string DlvProcess::errors() const { return err_.valid() ? readAll(err_.get()) : std::string(); }

bool DlvProcess::running() { return pid_ > 0 && processIsAlive(pid_); }

bool DlvProcess::waitExit(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (running()) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    if (pidfd_.valid()) {
      pollfd pfd{pidfd_.get(), POLLIN, 0};
      ::poll(&pfd, 1, static_cast<int>(std::min<long>(left, 50)));  // then re-check: a zombie counts as gone
    } else {
      std::this_thread::sleep_for(Millis(std::min<long>(left, 5)));
    }
  }
  return true;
}

Result<uint16_t> DlvProcess::waitForPort(Millis timeout) {
  // The line comes before dlv attaches (it listens first); polling the memfd
  // every few ms costs nothing next to the attach itself.
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto port = parseListeningPort(output())) return *port;
    if (!running()) return fail(ErrorKind::External, "dlv exited before listening: " + errors());
    if (Clock::now() >= deadline) {
      return fail(ErrorKind::External, "dlv did not print its port within " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(Millis(2));
  }
}

void DlvProcess::send(char type, const void* payload, size_t len, int fd) {
  if (!control_.valid()) return;
  char buf[16];
  buf[0] = type;
  if (len > 0) std::memcpy(buf + 1, payload, len);
  if (sendWithFd(control_.get(), buf, len + 1, fd) < 0) {
    spdlog::warn("delve: the guardian does not listen: {}", std::strerror(errno));
  }
}

void DlvProcess::guard(int connectionFd) { send(guardian::kConnection, nullptr, 0, connectionFd); }

void DlvProcess::noteBreakpoint(int64_t id) { send(guardian::kBreakpoint, &id, sizeof id); }

void DlvProcess::notePatch(uint64_t addr, uint8_t original) {
  for (const auto& p : patches_)
    if (p.addr == addr) return;
  patches_.push_back(TextPatch{addr, original, 0xCC});
  char payload[9];
  std::memcpy(payload, &addr, sizeof addr);
  payload[8] = static_cast<char>(original);
  send(guardian::kPatch, payload, sizeof payload);
}

void DlvProcess::noteTracer(pid_t tid) {
  tracerNoted_ = true;
  send(guardian::kTracer, &tid, sizeof tid);
}

void DlvProcess::noteHandler(uint64_t addr) { send(guardian::kHandler, &addr, sizeof addr); }

std::optional<ReleaseReport> DlvProcess::releaseReport(Millis timeout) {
  if (!tracerNoted_ || !report_.valid()) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    guardian::SentinelRecord rec;
    if (::pread(report_.get(), &rec, sizeof rec, 0) == static_cast<ssize_t>(sizeof rec) && rec.magic == guardian::kSentinelDone)
      return rec.held ? std::optional<ReleaseReport>(rec.report) : std::nullopt;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(Millis(5));
  }
}

void DlvProcess::restoreIfOrphaned() {
  if (patches_.empty() || running()) return;
  if (guardian_ > 0) {
    // A guardian SIGKILLed with dlv may not be dead yet when goscope sees
    // dlv gone (the kill lands after the stop it was frozen in): give it
    // half a second to be reaped before taking it for alive. (CI once saw
    // waitpid say "running" here and nobody restored zoo's int3 bytes.)
    int st = 0;
    pid_t r = 0;
    for (int i = 0; i < 50 && (r = ::waitpid(guardian_, &st, WNOHANG)) == 0; i++)
      std::this_thread::sleep_for(Millis(10));
    if (r == 0) return;  // alive: it restores (and we would race it)
    guardian_ = -1;      // reaped here
  }
  auto r = restoreText(target_, patches_.data(), static_cast<int>(patches_.size()), targetStoppedBefore_, exeDev_,
                       exeIno_);
  if (r.found > 0)
    spdlog::warn("delve: dlv and its guardian died without detaching; goscope restored {} of {} breakpoint bytes in PID {}",
                 r.restored, r.found, target_);
}

std::pair<int, int> DlvProcess::writeBackPatches() {
  // stoppedBefore: never SIGCONT; stopFirst false: the target sits in
  // ptrace-stops under dlv, nothing runs while the bytes are written.
  auto r = restoreText(target_, patches_.data(), static_cast<int>(patches_.size()), /*stoppedBefore=*/true, exeDev_,
                       exeIno_, /*stopFirst=*/false);
  return {r.found, r.restored};
}

void DlvProcess::standDown() {
  send(guardian::kStandDown, nullptr, 0);
  control_.reset();
  stoodDown_ = true;
  reapGuardian(Millis(10'000));
}

void DlvProcess::handOver(Millis timeout) {
  control_.reset();  // EOF: to the guardian, goscope is gone
  stoodDown_ = true;
  reapGuardian(timeout);
}

void DlvProcess::kill() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
  waitExit(Millis(5'000));
  standDown();  // the guardian reaps dlv and exits; the connection it held dies with dlv
}

void DlvProcess::reapGuardian(Millis timeout) {
  if (guardian_ <= 0) return;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(guardian_, &st, WNOHANG);
    if (r == guardian_ || (r < 0 && errno == ECHILD)) {
      guardian_ = -1;
      return;
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(Millis(2));
  }
  spdlog::warn("delve: the guardian (pid {}) did not finish; killing it", guardian_);
  ::kill(guardian_, SIGKILL);  // dlv then gets SIGTERM, its parent-death signal
  ::waitpid(guardian_, nullptr, 0);
  guardian_ = -1;
}

}  // namespace goscope::delve
