#include "api/session_loop.hpp"

#include <time.h>

#include <algorithm>
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


EndReason runSessionLoop(TracedTarget& target, const LoopOptions& o, const std::function<void(int)>& wait,
                         const std::function<void()>& onInterval) {
  double start = monotonicSeconds();
  double nextTick = o.intervalS > 0 ? start + o.intervalS : 0;
  for (;;) {
    if (o.finished && o.finished()) return EndReason::Finished;
    if (stopRequested()) return EndReason::Signal;
    double now = monotonicSeconds();
    if (o.durationS > 0 && now - start >= o.durationS) return EndReason::Duration;
    if (target.ended()) return EndReason::TargetExited;
    if (target.execed()) return EndReason::TargetExeced;
    if (nextTick > 0 && now >= nextTick) {
      onInterval();
      nextTick += o.intervalS;
      if (nextTick < now) nextTick = now + o.intervalS;  // we fell behind: do not burst
    }
    // Wake at least every 100 ms to notice the target's exit and signals.
    double until = 0.1;
    if (nextTick > 0) until = std::min(until, nextTick - now);
    if (o.durationS > 0) until = std::min(until, start + o.durationS - now);
    wait(std::max(1, static_cast<int>(until * 1000)));
  }
}

}  // namespace goscope
