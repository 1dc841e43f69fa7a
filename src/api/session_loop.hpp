// The loop every tracing subcommand runs once attached: wake for events,
// report each interval, and end on -d, on Ctrl-C/SIGTERM, or when the
// target exits — whichever comes first — so the caller can print totals.
#pragma once

#include <functional>
#include <string>

#include "target/traced_target.hpp"

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
};

// `wait(ms)` blocks up to ms (e.g. polling the ring buffer); `onInterval`
// runs every intervalS.
EndReason runSessionLoop(TracedTarget& target, const LoopOptions& options, const std::function<void(int)>& wait,
                         const std::function<void()>& onInterval);

double monotonicSeconds();

}  // namespace goscope
