// When the strategy's rate probe may stop early. The probe
// counts a function's hits in the kernel to choose between Delve and BPF; the
// choice only asks whether the rate is above or below one limit (the rate at
// which Delve's stops would take --max-overhead of the target's time). Once
// the count answers that with confidence, counting longer only delays the
// session: a function called 100,000 times a second is clearly too hot for
// Delve after 50 ms.
#pragma once

namespace goscope {

enum class RateVerdict { Unclear, Above, Below };

// The earliest the probe stops: below it, one burst or one quiet moment of
// the program decides.
inline constexpr double kRateProbeFloorS = 0.05;

// `hits` counted in `elapsedS`, against `limitPerS`. Hits are taken as a
// Poisson process at the true rate:
//   - Above: at least 10 hits and twice the limit's expected count;
//   - Below: the limit would have given at least 20 hits and at most a
//     quarter of them came (P < 1e-4 at the limit's rate).
// Unclear before the floor, or with no limit (<= 0).
RateVerdict rateVerdict(double hits, double elapsedS, double limitPerS);

}  // namespace goscope
