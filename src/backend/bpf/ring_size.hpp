// The event ring buffer's size for a trace, from the call rate the plan
// expects (measured by the rate probe, or --expect-rate): room for
// kBacklogS seconds of events, so the reader can fall that far behind (a
// poll's budget, a slow stdout, a CPU taken by someone else) before the
// kernel drops any, rounded up to a power of two (the kernel requires it)
// and kept between kMinBytes and kMaxBytes (the ring is locked kernel
// memory). Without a rate: kDefaultBytes. docs/overhead.md, "Trace
// throughput".
#pragma once

#include <cstdint>
#include <optional>

namespace goscope::bpf {

struct RingSize {
  uint32_t bytes = 0;
  bool capped = false;    // the rate asked for more than kMaxBytes
  bool fromRate = false;  // false: no rate known, the default size
};

inline constexpr uint32_t kRingMinBytes = 4u << 20;
inline constexpr uint32_t kRingDefaultBytes = 16u << 20;
inline constexpr uint32_t kRingMaxBytes = 256u << 20;
inline constexpr double kRingBacklogS = 0.5;
// The ring of the rate probe's engine, loaded before the rate is known and
// taken over by the trace that follows when the ring that trace's rate asks
// for is no larger (session/prepared_engine.hpp): half a second of the plainest
// trace's calls (336 bytes) up to 100,000 a second. A slower trace keeps the
// larger ring rather than load the programs again (~50 ms idle, seconds
// under load); a faster one loads its own. docs/overhead.md.
inline constexpr uint32_t kRingPreparedBytes = 32u << 20;

// bytesPerCall: what one call puts in the ring (entry and return records
// with their headers, captured blocks and stacks).
RingSize ringSizeFor(std::optional<double> callsPerS, uint64_t bytesPerCall);

}  // namespace goscope::bpf
