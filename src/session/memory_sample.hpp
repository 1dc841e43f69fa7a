// `goscope sample` without --at: once an interval, every expression read
// straight from the process's memory (backend/memory/direct_read.hpp), the
// target never stopped. What it reads is what `read` reads directly:
// package variables, fields through structs, len and cap; anything else is
// refused by the plan before the first sample (strategy.cpp, Action::Sample).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "probe/probe_request.hpp"
#include "process/traced_target.hpp"
#include "util/result.hpp"
#include "value/value.hpp"

namespace goscope::session {

struct MemorySample {
  int index = 0;
  double elapsedS = 0;        // since the first sample
  std::vector<Value> values;  // one per request.capture.exprs, named by it
  double readMs = 0;          // the read's own time
};
struct MemorySampleTotals {
  int taken = 0;
  double readMaxMs = 0;
  bool targetExited = false;  // the session ended with the target
  bool interrupted = false;   // a stop signal (Ctrl-C, SIGTERM)
  bool targetStopped = false; // it was stopped (state T) by someone else: read all the same, left so
};

// Samples until request.durationS (0: until a stop signal or the target's
// exit), one every request.intervalS; `onSample` false (nobody reads the
// output any more) ends it. Errors: the first read that failed for another
// reason than the target's exit.
Result<MemorySampleTotals> sampleMemory(const ProbeRequest& request, TracedTarget& target,
                                        const std::function<bool(const MemorySample&)>& onSample);

}  // namespace goscope::session
