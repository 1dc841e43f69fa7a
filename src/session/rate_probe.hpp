// The strategy layer's rate probe: hits per second of the functions a
// request names, counted in the kernel for a moment (rate_probe.cpp).
#pragma once

#include <sys/types.h>

#include <vector>

#include "binary/go_binary.hpp"
#include "probe/pattern.hpp"
#include "util/result.hpp"

namespace goscope::session {

// Hits per second of the functions `patterns` match in `pid`, counted in the
// kernel for `windowS` seconds (BPF counters at the cheap placement: the
// process does not stop). The strategy layer's rate probe.
// limitPerS > 0: stop as soon as the rate is clearly above or below it
// (src/strategy/rate_verdict.hpp), after at least 50 ms.
Result<double> measureHitRate(const GoBinary& binary, pid_t pid, const std::vector<Pattern>& patterns, double windowS,
                              double limitPerS = 0);

}  // namespace goscope::session
