// The loop every tracing subcommand runs once attached: wake for events,
// report each interval, and end on -d, on Ctrl-C/SIGTERM, or when the
// target exits — whichever comes first — so the caller can print totals.
//
// Time is kept as absolute CLOCK_MONOTONIC deadlines from the moment the
// probes went on (the caller says when): -d ends at start + d and the k-th
// interval is due at start + k·i, however late any one wake-up came. A wait
// that returns late (a loaded machine: goscope not scheduled) does not
// stretch the session; the report that comes late says how late it is.
#pragma once

#include <functional>
#include <string>

#include "process/traced_target.hpp"

namespace goscope {

// Finished: the caller's own end (LoopOptions::finished said so).
// ProbesLost: the BPF link holder died, and every probe with it (set by the
// session, not by runSessionLoop).
enum class EndReason { Duration, Signal, TargetExited, TargetExeced, Finished, ProbesLost };
std::string describe(EndReason r);

struct LoopOptions {
  double intervalS = 0;  // 0: no interval reports
  double durationS = 0;  // 0: until a signal or the target exits
  std::function<bool()> finished;  // optional: true ends the loop (e.g. -n calls delivered)
  double startS = 0;     // CLOCK_MONOTONIC seconds the probes went on; 0: when the loop starts
};

// An interval that came due: its index (1, 2, ...), when it was due, and how
// long after that the loop got to it (a loaded machine). Intervals skipped
// while goscope did not run are folded into the next one (skipped > 0):
// there is no reading of the counters at a moment goscope did not run.
struct IntervalDue {
  int index = 0;
  double dueS = 0;   // CLOCK_MONOTONIC
  double lateS = 0;  // now - dueS when the loop saw it
  int skipped = 0;   // whole intervals passed without a report before this one
  bool last = false; // due at -d's end: the loop ends after it
  // now - the due time of the oldest interval folded in (lateS when none
  // was skipped): how long the report kept its readers waiting.
  double overdueS = 0;
  // Of overdueS, at most: the CPU time the loop's thread spent since it
  // last looked at the clock (the last report's reading and printing, a
  // drain): goscope's own work. The rest is time it waited for a CPU or slept.
  double ownS = 0;
};

struct LoopEnd {
  EndReason why = EndReason::Signal;
  double endS = 0;   // CLOCK_MONOTONIC: when the loop saw its end
  double lateS = 0;  // Duration: how long after -d's deadline that was
  double ownS = 0;   // of lateS, at most: goscope's own work (as IntervalDue::ownS)
  // Duration: the last interval came due at -d's end and has not been
  // reported yet; the caller reports it with its final reading.
  std::optional<IntervalDue> lastInterval;
};

// `wait(untilS)` blocks until the CLOCK_MONOTONIC moment untilS at the
// latest (polling the ring buffer, or sleeping) and may return earlier (an
// event, a signal); `onInterval` runs for each interval that comes due
// before the end. The interval due at -d's end is not run but handed back
// in LoopEnd::lastInterval, so that the last report and the totals are one
// reading of the counters taken at the end.
LoopEnd runSessionLoop(TracedTarget& target, const LoopOptions& options, const std::function<void(double)>& wait,
                       const std::function<void(const IntervalDue&)>& onInterval);

double monotonicSeconds();
// The CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in seconds.
double threadCpuSeconds();
// Milliseconds from now to `untilS` (CLOCK_MONOTONIC), rounded up so that a
// wait of that many milliseconds does not wake before it; at least 0.
int millisecondsUntil(double untilS);
// Sleeps until the CLOCK_MONOTONIC moment untilS (absolute: a late wake-up
// is not added to the next); returns early on a signal.
void sleepUntil(double untilS);

}  // namespace goscope
