#include "backend/bpf/ring_size.hpp"

#include <algorithm>
#include <cmath>

namespace goscope::bpf {

RingSize ringSizeFor(std::optional<double> callsPerS, uint64_t bytesPerCall) {
  if (!callsPerS || !std::isfinite(*callsPerS) || *callsPerS < 0) return {kRingDefaultBytes, false, false};
  const double want = *callsPerS * static_cast<double>(bytesPerCall) * kRingBacklogS;
  if (want > kRingMaxBytes) return {kRingMaxBytes, true, true};
  uint32_t bytes = kRingMinBytes;
  while (bytes < want) bytes *= 2;  // <= kRingMaxBytes, a power of two
  return {bytes, false, true};
}

}  // namespace goscope::bpf
