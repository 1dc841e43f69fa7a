#include "session/session_loop.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/stop_signals.hpp"

namespace goscope {

std::string describe(EndReason r) {
  switch (r) {
    case EndReason::Duration: return "duration reached";
    case EndReason::Signal: return "interrupted";
    case EndReason::TargetExited: return "target exited";
    case EndReason::TargetExeced: return "target replaced its program (exec); the probes were in the old one";
    case EndReason::Finished: return "finished";
    case EndReason::ProbesLost: return "the link holder died: the kernel removed every probe";
  }
  return "";
}

double monotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int millisecondsUntil(double untilS) {
  const double ms = std::ceil((untilS - monotonicSeconds()) * 1000);
  return ms <= 0 ? 0 : static_cast<int>(std::min(ms, 1e9));
}

void sleepUntil(double untilS) {
  if (untilS <= 0) return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(untilS);
  ts.tv_nsec = static_cast<long>((untilS - static_cast<double>(ts.tv_sec)) * 1e9);
  if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
  // EINTR (a stop signal: the handlers have no SA_RESTART) returns at once.
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

namespace {

// Wake at least this often to notice the target's exit and signals.
constexpr double kPollS = 0.1;
// A deadline this close counts as reached (floating-point sums of -i).
constexpr double kSlackS = 1e-6;

}  // namespace

LoopEnd runSessionLoop(TracedTarget& target, const LoopOptions& o, const std::function<void(double)>& wait,
                       const std::function<void(const IntervalDue&)>& onInterval) {
  const double start = o.startS > 0 ? o.startS : monotonicSeconds();
  const double end = o.durationS > 0 ? start + o.durationS : 0;
  // The k-th interval is due at start + k·i: computed from k, never by
  // adding up late wake-ups.
  int k = 1;
  auto dueAt = [&](int n) { return start + n * o.intervalS; };
  // Why a reading is late: the loop's thread's CPU time between two looks
  // at the clock is goscope's own work (a report's reading and printing, a
  // drain); the rest of a lateness is time it was not run. Looked at only
  // when there are deadlines to be late for (one clock_gettime a wake-up).
  const bool timed = o.intervalS > 0 || end > 0;
  double cpuAtLook = timed ? threadCpuSeconds() : 0;
  double ownSinceLook = 0;
  auto ownOf = [&](double overdueS) { return std::clamp(ownSinceLook, 0.0, overdueS); };
  auto ended = [&](EndReason why, double now) {
    LoopEnd e{why, now};
    if (why == EndReason::Duration) {
      e.lateS = std::max(0.0, now - end);
      e.ownS = ownOf(e.lateS);
      // The interval due at the end (-i 1 -d 3: the third) is the caller's
      // to report, with the reading of the totals.
      if (o.intervalS > 0 && dueAt(k) <= end + kSlackS) {
        // Whole intervals before it that were never reported: folded in.
        int last = k;
        while (dueAt(last + 1) <= end + kSlackS) last++;
        const double overdue = std::max(0.0, now - dueAt(k));
        e.lastInterval =
            IntervalDue{last, dueAt(last), std::max(0.0, now - dueAt(last)), last - k, true, overdue, ownOf(overdue)};
      }
    }
    return e;
  };
  double nextTargetLook = 0;  // the first pass looks
  for (;;) {
    if (o.finished && o.finished()) return ended(EndReason::Finished, monotonicSeconds());
    if (stopRequested()) return ended(EndReason::Signal, monotonicSeconds());
    const double now = monotonicSeconds();
    if (timed) {
      const double cpu = threadCpuSeconds();
      ownSinceLook = cpu - cpuAtLook;
      cpuAtLook = cpu;
    }
    if (end > 0 && now + kSlackS >= end) return ended(EndReason::Duration, now);
    // The target is looked at once per kPollS, not on every wake-up: a look
    // reads several /proc files (the stat of a process sums all its
    // threads), and a traced burst wakes this loop thousands of times a
    // second, where these looks cost goscope more CPU than the events.
    if (now >= nextTargetLook) {
      nextTargetLook = now + kPollS;
      // An exec first: it can look like an exit to a pidfd (Process::replacedImage).
      if (target.execed()) return ended(EndReason::TargetExeced, now);
      if (target.ended()) return ended(EndReason::TargetExited, now);
    }
    if (o.intervalS > 0 && now + kSlackS >= dueAt(k)) {
      // Late by more than a whole interval (goscope did not run): one report
      // for all of them, saying so; the next is due on the original grid.
      int last = k;
      while (now + kSlackS >= dueAt(last + 1) && (end == 0 || dueAt(last + 1) < end - kSlackS)) last++;
      const double overdue = std::max(0.0, now - dueAt(k));
      onInterval(IntervalDue{last, dueAt(last), std::max(0.0, now - dueAt(last)), last - k, false, overdue,
                             ownOf(overdue)});
      k = last + 1;
      continue;  // the report took time: look at the clock again
    }
    double until = now + kPollS;
    if (o.intervalS > 0) until = std::min(until, dueAt(k));
    if (end > 0) until = std::min(until, end);
    wait(until);
  }
}

}  // namespace goscope
