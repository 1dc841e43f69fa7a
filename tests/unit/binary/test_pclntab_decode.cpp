// Varint and pc-value decoding on hand-made bytes (the encoding Go's linker
// writes in pctab: see src/binary/pclntab_decode.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "binary/pclntab_decode.hpp"

using namespace goscope::pcln;

namespace {

void putUvarint(std::vector<uint8_t>& out, uint32_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

uint32_t zigzag(int32_t v) { return v < 0 ? ~(static_cast<uint32_t>(v) << 1) : static_cast<uint32_t>(v) << 1; }

std::vector<PcValueRun> decodeAll(const std::vector<uint8_t>& t, uint64_t entry, uint32_t quantum = 1) {
  std::vector<PcValueRun> runs;
  PcValueDecoder d(t, entry, quantum);
  for (PcValueRun r; d.next(r);) runs.push_back(r);
  return runs;
}

constexpr uint64_t kEntry = 0x1000;

// A random table (zero-length runs, negative deltas, sometimes the
// terminator, sometimes a cut varint), a quantum, and targets in any order,
// repeats and targets before the entry or past the end included.
struct RandomCase {
  std::vector<uint8_t> table;
  uint32_t quantum = 1;
  std::vector<uint64_t> targets;
};

RandomCase randomCase(std::mt19937& rng) {
  RandomCase c;
  const int pairs = static_cast<int>(rng() % 12);
  for (int p = 0; p < pairs; p++) {
    putUvarint(c.table, zigzag(static_cast<int32_t>(rng() % 9) - 4));
    putUvarint(c.table, rng() % 5 == 0 ? 0 : rng() % 40);
  }
  if (rng() % 4 == 0) c.table.push_back(0x00);                       // the terminator
  if (rng() % 6 == 0) c.table.push_back(static_cast<uint8_t>(0x80));  // a cut varint
  c.quantum = rng() % 3 == 0 ? 4 : 1;
  const int n = static_cast<int>(rng() % 20);
  for (int k = 0; k < n; k++) c.targets.push_back(kEntry - 8 + rng() % 600);
  return c;
}

}  // namespace

TEST_CASE("readUvarint decodes LEB128 and rejects truncated or oversized input") {
  auto one = [](std::vector<uint8_t> b) {
    size_t pos = 0;
    auto v = readUvarint(b, pos);
    return std::make_pair(v, pos);
  };
  CHECK(one({0x00}) == std::make_pair(std::optional<uint32_t>(0), size_t{1}));
  CHECK(one({0x7f}) == std::make_pair(std::optional<uint32_t>(127), size_t{1}));
  CHECK(one({0x80, 0x01}) == std::make_pair(std::optional<uint32_t>(128), size_t{2}));
  CHECK(one({0xe5, 0x8e, 0x26}) == std::make_pair(std::optional<uint32_t>(624485), size_t{3}));
  CHECK(one({0xff, 0xff, 0xff, 0xff, 0x0f}) == std::make_pair(std::optional<uint32_t>(0xffffffffu), size_t{5}));
  CHECK_FALSE(one({0x80}).first);                                // runs off the end
  CHECK_FALSE(one({}).first);                                    // empty
  CHECK_FALSE(one({0x80, 0x80, 0x80, 0x80, 0x80, 0x01}).first);  // more than 5 bytes

  // Consecutive values advance pos.
  std::vector<uint8_t> b{0x05, 0x80, 0x02, 0x01};
  size_t pos = 0;
  CHECK(readUvarint(b, pos) == 5u);
  CHECK(readUvarint(b, pos) == 256u);
  CHECK(readUvarint(b, pos) == 1u);
  CHECK(pos == 4);
}

TEST_CASE("unzigzag maps 0,1,2,3,4 to 0,-1,1,-2,2 and covers the int32 range") {
  CHECK(unzigzag(0) == 0);
  CHECK(unzigzag(1) == -1);
  CHECK(unzigzag(2) == 1);
  CHECK(unzigzag(3) == -2);
  CHECK(unzigzag(4) == 2);
  CHECK(unzigzag(0xfffffffeu) == INT32_MAX);
  CHECK(unzigzag(0xffffffffu) == INT32_MIN);
}

TEST_CASE("a pc-value table decodes into runs starting at the entry, value starting at -1") {
  // (+5, 4 bytes) (-2, 128 bytes) end: values 4 then 2.
  std::vector<uint8_t> t{0x0a, 0x04, 0x03, 0x80, 0x01, 0x00};
  auto runs = decodeAll(t, 0x1000);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].start == 0x1000);
  CHECK(runs[0].end == 0x1004);
  CHECK(runs[0].value == 4);
  CHECK(runs[1].start == 0x1004);
  CHECK(runs[1].end == 0x1084);
  CHECK(runs[1].value == 2);

  CHECK_FALSE(pcValueAt(t, 0x1000, 0xfff));  // before the entry
  CHECK(pcValueAt(t, 0x1000, 0x1000) == 4);
  CHECK(pcValueAt(t, 0x1000, 0x1003) == 4);
  CHECK(pcValueAt(t, 0x1000, 0x1004) == 2);
  CHECK(pcValueAt(t, 0x1000, 0x1083) == 2);
  CHECK_FALSE(pcValueAt(t, 0x1000, 0x1084));  // past the last run (e.g. alignment padding)
  CHECK(pcValueMax(t, 0x1000) == 4);
}

TEST_CASE("only the first pair may have a zero value delta — later a zero ends the table") {
  // First pair (0, 16): value stays -1 for 16 bytes; then (+1, 8): 0; then 0 = end,
  // even though more bytes follow.
  std::vector<uint8_t> t{0x00, 0x10, 0x02, 0x08, 0x00, 0x02, 0x08};
  auto runs = decodeAll(t, 0);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].value == -1);
  CHECK(runs[0].end == 16);
  CHECK(runs[1].value == 0);
  CHECK(runs[1].end == 24);
  CHECK(pcValueAt(t, 0, 5) == -1);
  CHECK(pcValueMax(t, 0) == 0);
}

TEST_CASE("pc deltas are multiplied by the pc quantum") {
  std::vector<uint8_t> t{0x02, 0x03, 0x02, 0x01, 0x00};  // (+1, 3) (+1, 1)
  auto runs = decodeAll(t, 0x100, 4);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].end == 0x100 + 12);
  CHECK(runs[1].end == 0x100 + 16);
  CHECK(pcValueAt(t, 0x100, 0x100 + 12, 4) == 1);
}

TEST_CASE("malformed tables stop decoding instead of reading past the bytes") {
  SUBCASE("value delta without its pc delta") {
    std::vector<uint8_t> t{0x0a};
    PcValueDecoder d(t, 0);
    PcValueRun r;
    CHECK_FALSE(d.next(r));
    CHECK(d.malformed());
    CHECK_FALSE(pcValueAt(t, 0, 0));
  }
  SUBCASE("table without a terminator") {
    std::vector<uint8_t> t{0x0a, 0x04};
    PcValueDecoder d(t, 0);
    PcValueRun r;
    CHECK(d.next(r));
    CHECK_FALSE(d.next(r));
    CHECK(d.malformed());
    CHECK(pcValueAt(t, 0, 2) == 4);  // the run that was complete still answers
  }
  SUBCASE("empty table") {
    std::vector<uint8_t> t;
    CHECK_FALSE(pcValueAt(t, 0, 0));
    CHECK_FALSE(pcValueMax(t, 0));
  }
}

TEST_CASE("random line tables round-trip through the encoder the linker uses") {
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 200; iter++) {
    // A table of runs with arbitrary (including large and negative) value steps.
    int n = 1 + static_cast<int>(rng() % 40);
    std::vector<uint8_t> t;
    std::vector<PcValueRun> want;
    int32_t value = -1;
    uint64_t pc = 0x400000;
    for (int i = 0; i < n; i++) {
      int32_t delta = static_cast<int32_t>(rng() % 2000001) - 1000000;
      if (i > 0 && delta == 0) delta = 1;  // a zero delta would end the table
      if (iter % 7 == 0) delta *= 1000;    // values beyond 28 bits: 5-byte varints
      uint32_t len = 1 + rng() % 300;
      putUvarint(t, zigzag(delta));
      putUvarint(t, len);
      value = static_cast<int32_t>(static_cast<uint32_t>(value) + static_cast<uint32_t>(delta));  // wraps like Go
      want.push_back({pc, pc + len, value});
      pc += len;
    }
    t.push_back(0);
    auto got = decodeAll(t, 0x400000);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); i++) {
      CHECK(got[i].start == want[i].start);
      CHECK(got[i].end == want[i].end);
      CHECK(got[i].value == want[i].value);
      CHECK(pcValueAt(t, 0x400000, want[i].end - 1) == want[i].value);
    }
  }
}

TEST_CASE("pcValuesAt answers each target as pcValueAt does, in one walk") {
  std::mt19937 rng(14);
  for (int round = 0; round < 2000; round++) {
    const auto [t, quantum, targets] = randomCase(rng);
    const auto got = pcValuesAt(t, kEntry, targets, quantum);
    REQUIRE(got.size() == targets.size());
    for (size_t k = 0; k < targets.size(); k++) {
      CAPTURE(round);
      CAPTURE(targets[k]);
      CHECK(got[k] == pcValueAt(t, kEntry, targets[k], quantum));
    }
  }
}

TEST_CASE("runStartsAt gives each target the start of the run that holds it, in one walk") {
  std::mt19937 rng(15);
  for (int round = 0; round < 2000; round++) {
    auto [t, quantum, targets] = randomCase(rng);
    std::sort(targets.begin(), targets.end());
    const auto got = runStartsAt(t, kEntry, targets, quantum);
    REQUIRE(got.size() == targets.size());
    const auto runs = decodeAll(t, kEntry, quantum);
    for (size_t k = 0; k < targets.size(); k++) {
      std::optional<uint64_t> want;
      for (const auto& r : runs)
        if (r.start <= targets[k] && targets[k] < r.end) {
          want = r.start;
          break;
        }
      CAPTURE(round);
      CAPTURE(targets[k]);
      CHECK(got[k] == want);
    }
  }
}
