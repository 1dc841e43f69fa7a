// The header of an interval report (count -i, latency -i, trace --folded -i)
// from the session's reading: its end, its true length, and how late it was
// read when that is worth saying (a loaded machine did not run goscope on
// time: the report says so rather than passing a stretched interval off as
// a normal one).
#pragma once

#include <algorithm>
#include <cstdio>

#include "api/goscope.hpp"
#include "output/output.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

// A reading later than this after its due time is said: beyond the jitter of
// a wake-up on a busy machine (a few ms), small against the interval.
inline double lateWorthSayingS(double intervalS) { return std::max(0.05, 0.05 * intervalS); }

inline output::Output::Interval intervalOf(const api::CountSnapshot& snap, double lastS, double intervalS,
                                           size_t omitted = 0) {
  output::Output::Interval in{snap.elapsedS, snap.elapsedS - lastS, omitted};
  if (snap.intervalsSkipped > 0 || snap.intervalLateS >= lateWorthSayingS(intervalS)) {
    in.lateS = snap.intervalLateS;
    in.skipped = snap.intervalsSkipped;
    in.overdueS = snap.intervalOverdueS;
    in.ownS = snap.intervalOwnS;
  }
  return in;
}

// Each interval's cost to the target, from the session's running totals
// (CountSnapshot::costSoFar): what the probes took since the previous
// interval's totals, over the time between the two meter samples they are
// as of. An interval with no new sample (-i below the meter's 250 ms)
// repeats the newest figure rather than claim 0.
class IntervalCost {
 public:
  void fill(const api::CountSnapshot& snap, output::Output::Interval& in) {
    if (!snap.costSoFar) return;
    const api::SessionCost& c = *snap.costSoFar;
    const double cpuMs = c.cpuMs + c.stoppedMs;
    output::Output::Interval::Cost cost;
    cost.sessionCpuMs = cpuMs;
    cost.sessionSharePct = c.sharePct();
    cost.budgetPct = c.budgetPct;
    cost.enforced = c.enforced;
    const double dt = c.elapsedS - lastAtS_;
    if (dt > 0) {
      cost.cpuMs = std::max(0.0, cpuMs - lastCpuMs_);
      cost.sharePct = cost.cpuMs / (dt * 10);  // ms per s, in % of one CPU
      lastSharePct_ = cost.sharePct;
    } else {
      cost.sharePct = lastSharePct_;
    }
    lastCpuMs_ = cpuMs;
    lastAtS_ = std::max(lastAtS_, c.elapsedS);
    in.cost = cost;
  }

 private:
  double lastCpuMs_ = 0, lastAtS_ = 0, lastSharePct_ = 0;
};

// On stderr, when the session's end was read late after -d's deadline: the
// totals cover more than -d, by how much.
inline void printEndLate(const api::CountSnapshot& snap, double durationS) {
  if (durationS <= 0 || snap.endLateS < lateWorthSayingS(durationS)) return;
  output::toStderr("goscope: the counters were read %.2f s after -d's end (%s): they cover %.2f s\n", snap.endLateS,
                   output::lateCause(snap.endLateS, snap.endOwnS).c_str(), snap.elapsedS);
}

}  // namespace goscope::cli
