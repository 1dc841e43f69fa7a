#include "session/memory_sample.hpp"

#include <chrono>
#include <thread>

#include "backend/memory/direct_read.hpp"
#include "process/run_state.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

namespace {
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

Result<MemorySampleTotals> sampleMemory(const ProbeRequest& r, TracedTarget& target,
                                        const std::function<bool(const MemorySample&)>& onSample) {
  const Process* proc = target.process();
  if (!proc) return fail(ErrorKind::Usage, "sample: reading from memory needs a running process (-p PID)");
  auto bias = target.loadBias();
  if (!bias) return bias.failure();
  DirectReadLimits limits;
  limits.maxString = r.hitLimits.maxString;
  limits.maxElems = r.hitLimits.maxElements;
  limits.maxDepth = r.hitLimits.maxDepth;
  const double intervalS = r.intervalS > 0 ? r.intervalS : 1.0;
  MemorySampleTotals totals;
  const auto t0 = Clock::now();
  for (int i = 1;; ++i) {
    if (stopRequested()) {
      totals.interrupted = true;
      break;
    }
    if (!proc->alive()) {
      totals.targetExited = true;
      break;
    }
    MemorySample s;
    s.index = i;
    s.elapsedS = msSince(t0) / 1000;
    const auto readAt = Clock::now();
    for (const auto& e : r.capture.exprs) {
      auto v = readGlobalDirect(target.binary(), *proc, *bias, e, limits);
      if (!v) {
        if (v.error().kind == ErrorKind::TargetGone || !proc->alive()) {
          totals.targetExited = true;
          return totals;
        }
        return fail(v.error().kind, "sample: " + e + ": " + v.error().message, v.error().hint);
      }
      s.values.push_back(std::move(*v));
    }
    s.readMs = msSince(readAt);
    if (s.readMs > totals.readMaxMs) totals.readMaxMs = s.readMs;
    totals.taken++;
    if (!onSample(s)) break;
    // The next tick on the first sample's clock (no drift), or the end.
    const double next = i * intervalS;
    if (r.durationS > 0 && next >= r.durationS) break;
    while (msSince(t0) / 1000 < next && !stopRequested() && proc->alive())
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::max<long>(1, std::min<long>(50, static_cast<long>(next * 1000 - msSince(t0))))));
  }
  totals.targetStopped = runStateOf(proc->pid()) == RunState::Stopped;
  return totals;
}

}  // namespace goscope::session
