// The loop every tracing subcommand runs once attached: wake for events,
// report each interval, and end on -d, on Ctrl-C/SIGTERM, or when the
// target exits — whichever comes first — so the caller can print totals.
#pragma once

#include <functional>
#include <string>

#include "session/traced_target.hpp"

namespace goscope {

enum class EndReason { Duration, Signal, TargetExited, TargetExeced };
std::string describe(EndReason r);

struct LoopOptions {
  double intervalS = 0;  // 0: no interval reports
  double durationS = 0;  // 0: until a signal or the target exits
};

// `wait(ms)` blocks up to ms (e.g. polling the ring buffer); `onInterval`
// runs every intervalS.
EndReason runSessionLoop(TracedTarget& target, const LoopOptions& options, const std::function<void(int)>& wait,
                         const std::function<void()>& onInterval);

double monotonicSeconds();
std::string wallClock();  // "HH:MM:SS"

}  // namespace goscope
