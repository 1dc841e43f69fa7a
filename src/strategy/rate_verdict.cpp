#include "strategy/rate_verdict.hpp"

namespace goscope {

RateVerdict rateVerdict(double hits, double elapsedS, double limitPerS) {
  if (limitPerS <= 0 || elapsedS < kRateProbeFloorS) return RateVerdict::Unclear;
  const double expectedAtLimit = limitPerS * elapsedS;
  if (hits >= 10 && hits >= 2 * expectedAtLimit) return RateVerdict::Above;
  if (expectedAtLimit >= 20 && hits <= expectedAtLimit / 4) return RateVerdict::Below;
  return RateVerdict::Unclear;
}

}  // namespace goscope
