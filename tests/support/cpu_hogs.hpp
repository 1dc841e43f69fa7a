// A loaded machine for the tests that must hold under load (the "loaded"
// doctest suite): processes that spin on a CPU each, started by the test and
// stopped by their PIDs when it ends; and a measure of what the load does to
// a sleeper, so that a test can state a bound that accounts for it. Three per online CPU by default, as
// the machines the reliability issues were found on ran at load 8-28.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace goscope::test {

class CpuHogs {
 public:
  // n <= 0: three per online CPU.
  explicit CpuHogs(int n = 0) {
    if (n <= 0) n = 3 * static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
    const pid_t parent = ::getpid();
    for (int i = 0; i < n; i++) {
      pid_t p = ::fork();
      if (p == 0) {
        // Dies with the test, even if the test is SIGKILLed.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(0);
        volatile unsigned long spins = 0;
        for (;;) spins = spins + 1;
      }
      if (p > 0) pids_.push_back(p);
    }
  }
  ~CpuHogs() {
    for (pid_t p : pids_) ::kill(p, SIGKILL);
    for (pid_t p : pids_) {
      int status;
      while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  CpuHogs(const CpuHogs&) = delete;
  CpuHogs& operator=(const CpuHogs&) = delete;
  size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// The load average over the last minute (/proc/loadavg), for the messages.
inline double loadAverage() {
  double one = 0;
  if (FILE* f = ::fopen("/proc/loadavg", "r")) {
    if (::fscanf(f, "%lf", &one) != 1) one = 0;
    ::fclose(f);
  }
  return one;
}

// Rounds of a loaded test: GOSCOPE_LOADED_ROUNDS, 5 by default (what CI
// runs); scripts run the full tier with 20.
inline long loadedRounds() {
  const char* v = ::getenv("GOSCOPE_LOADED_ROUNDS");
  long n = v && *v ? ::strtol(v, nullptr, 10) : 0;
  return n > 0 ? n : 5;
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
