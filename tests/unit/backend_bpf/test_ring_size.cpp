// The ring buffer's size from a call rate (backend/bpf/ring_size.hpp).
#include <doctest/doctest.h>

#include <optional>

#include "backend/bpf/ring_size.hpp"

TEST_CASE("ring size: half a second of the expected calls, a power of two, between 4 MB and 256 MB") {
  using namespace goscope::bpf;
  auto none = ringSizeFor(std::nullopt, 336);
  CHECK(none.bytes == kRingDefaultBytes);
  CHECK_FALSE(none.fromRate);
  CHECK(ringSizeFor(10.0, 336).bytes == kRingMinBytes);
  auto r = ringSizeFor(100000.0, 336);  // 16.8 MB wanted
  CHECK(r.bytes == 32u << 20);
  CHECK(r.fromRate);
  CHECK_FALSE(r.capped);
  auto big = ringSizeFor(1e9, 336);
  CHECK(big.bytes == kRingMaxBytes);
  CHECK(big.capped);
  for (double rate : {1.0, 5e4, 3e5}) {
    const uint32_t b = ringSizeFor(rate, 600).bytes;
    CHECK((b & (b - 1)) == 0);
    CHECK(b >= rate * 600 * kRingBacklogS);
  }
}
