#include "util/exec_follow.hpp"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <set>
#include <thread>

namespace goscope {

namespace {

constexpr long kFollow = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;

std::string exeOf(pid_t pid) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int exitStatusOf(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

bool isForkEvent(int event) {
  return event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE;
}

// The signal a stop should pass on when the tracee goes on: a
// signal-delivery stop's own signal; none for ptrace's event stops.
int signalToPass(int st) {
  const int event = st >> 16, sig = WSTOPSIG(st);
  return event == 0 && sig != SIGTRAP ? sig : 0;
}

// Lets every process in `traced` go untraced: each is stopped (it may be
// running), then detached with what its stop was holding. Children forked
// meanwhile are auto-attached, so they are let go too.
void letAllGo(std::set<pid_t> traced) {
  while (!traced.empty()) {
    pid_t p = *traced.begin();
    traced.erase(traced.begin());
    ::ptrace(PTRACE_INTERRUPT, p, nullptr, nullptr);
    for (int tries = 0; tries < 2000; tries++) {  // ~2 s: a process that does not stop is left traced; goscope's exit frees it
      int st = 0;
      pid_t r = ::waitpid(p, &st, WNOHANG | __WALL);
      if (r < 0) break;  // gone
      if (r == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (!WIFSTOPPED(st)) break;  // exited
      if (isForkEvent(st >> 16)) {
        unsigned long child = 0;
        if (::ptrace(PTRACE_GETEVENTMSG, p, nullptr, &child) == 0 && child) traced.insert(static_cast<pid_t>(child));
      }
      ::ptrace(PTRACE_DETACH, p, nullptr, reinterpret_cast<void*>(static_cast<long>(signalToPass(st))));
      break;
    }
  }
}

}  // namespace

HeldExec& HeldExec::operator=(HeldExec&& o) noexcept {
  if (this != &o) {
    release();
    pid_ = std::exchange(o.pid_, -1);
    exe_ = std::move(o.exe_);
  }
  return *this;
}

void HeldExec::release() {
  if (pid_ > 0) ::ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
  pid_ = -1;
}

Result<HeldExec> followToProgram(pid_t wrapper, const std::function<Result<void>()>& letGo,
                                 const std::function<bool(const std::string& exe)>& accept,
                                 std::chrono::milliseconds timeout, int* wrapperStatus) {
  if (::ptrace(PTRACE_SEIZE, wrapper, nullptr, reinterpret_cast<void*>(kFollow)) != 0)
    return fail(ErrorKind::External, std::string("cannot follow the command to the program it runs (ptrace: ") +
                                         std::strerror(errno) + ")");
  if (auto r = letGo(); !r) return r.failure();  // its exec failed: it is reaped, nothing is traced

  std::set<pid_t> traced{wrapper};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool moved = false;
    for (pid_t p : std::set<pid_t>(traced)) {
      int st = 0;
      pid_t r = ::waitpid(p, &st, WNOHANG | __WALL);
      if (r == 0) continue;
      moved = true;
      if (r < 0 || !WIFSTOPPED(st)) {  // gone
        traced.erase(p);
        if (p == wrapper && r > 0) {
          if (wrapperStatus) *wrapperStatus = exitStatusOf(st);
          letAllGo(traced);
          return fail(ErrorKind::BadTarget, "the command exited (status " + std::to_string(exitStatusOf(st)) +
                                               ") without running a Go program");
        }
        continue;
      }
      const int event = st >> 16;
      if (event == PTRACE_EVENT_EXEC) {
        std::string exe = exeOf(p);
        if (!exe.empty() && accept(exe)) {
          traced.erase(p);
          letAllGo(traced);
          return HeldExec(p, std::move(exe));  // held in its exec stop
        }
      } else if (isForkEvent(event)) {
        unsigned long child = 0;
        if (::ptrace(PTRACE_GETEVENTMSG, p, nullptr, &child) == 0 && child) traced.insert(static_cast<pid_t>(child));
      } else if (event == PTRACE_EVENT_STOP && WSTOPSIG(st) != SIGTRAP) {
        ::ptrace(PTRACE_LISTEN, p, nullptr, nullptr);  // a real group stop (SIGSTOP, SIGTSTP): it stays stopped
        continue;
      }
      ::ptrace(PTRACE_CONT, p, nullptr, reinterpret_cast<void*>(static_cast<long>(signalToPass(st))));
    }
    if (!moved) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  letAllGo(traced);
  return fail(ErrorKind::BadTarget, "the command ran no Go program within " +
                                        std::to_string(timeout.count() / 1000) + " s");
}

}  // namespace goscope
