// A loaded machine, made by the test itself: `perCore` busy processes per
// online CPU (forks of the test that spin and never make a system call),
// SIGKILLed and reaped by their PIDs when the object goes (and killed by the
// kernel if the test process dies first: PR_SET_PDEATHSIG). And a measure of
// what the load does to a sleeper: how late short sleeps wake up, so that a
// test can state a bound that accounts for the load it ran under.
// Header-only; include it from doctest test files.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace goscope::test {

class CpuHogs {
 public:
  explicit CpuHogs(int perCore = 3) {
    const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    for (long i = 0; i < cores * perCore; i++) {
      const pid_t parent = ::getpid();
      const pid_t p = ::fork();
      if (p == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(0);
        for (unsigned long n = 0;; n++) asm volatile("" : "+r"(n));  // a loop the compiler keeps
      }
      if (p > 0) pids_.push_back(p);
    }
  }
  ~CpuHogs() {
    for (pid_t p : pids_) ::kill(p, SIGKILL);
    for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
  }
  CpuHogs(const CpuHogs&) = delete;
  CpuHogs& operator=(const CpuHogs&) = delete;
  size_t count() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// The 1-minute load average, for the test's messages.
inline double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// Over `window`, how late 10 ms sleeps of this thread wake up: the worst
// lateness seen, in seconds — what the load does to a process that sleeps
// and must run on time (goscope at an interval's end).
inline double worstWakeupLateness(std::chrono::milliseconds window) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + window;
  double worst = 0;
  while (Clock::now() < end) {
    const auto before = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const double late = std::chrono::duration<double>(Clock::now() - before).count() - 0.010;
    worst = std::max(worst, late);
  }
  return worst;
}

}  // namespace goscope::test
