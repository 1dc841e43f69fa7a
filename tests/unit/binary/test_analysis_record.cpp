// The analysis cache's file format (binary/analysis_record.hpp), pure: a
// record comes back as written; a damaged file, another binary's, or a
// record that contradicts the binary is refused whole, with the reason.
// The cache on real binaries (warm start, a corrupt file ignored):
// tests/runtime/test_analysis_cache.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <map>

#include "binary/analysis_record.hpp"

using namespace goscope;

namespace {

// A made-up binary: functions are the 4 KiB pages of [0x400000, 0x500000);
// main.callee at 0x401000 is called from 0x402010 and 0x403020 (e8 rel32).
struct FakeBinary {
  std::map<uint64_t, GoFunction> fns;
  std::map<uint64_t, std::array<uint8_t, 5>> calls;
  FakeBinary() {
    for (uint64_t p = 0x400000; p < 0x500000; p += 0x1000) fns[p] = GoFunction{"main.f" + std::to_string(p), p, p + 0x1000};
    for (uint64_t site : {0x402010ull, 0x403020ull}) {
      std::array<uint8_t, 5> b{0xe8};
      const int32_t rel = static_cast<int32_t>(0x401000 - static_cast<int64_t>(site + 5));
      std::memcpy(b.data() + 1, &rel, 4);
      calls[site] = b;
    }
  }
  AnalysisChecks checks() const {
    return {[this](uint64_t a) -> const GoFunction* {
              auto it = fns.upper_bound(a);
              if (it == fns.begin()) return nullptr;
              --it;
              return a < it->second.end ? &it->second : nullptr;
            },
            [this](uint64_t a, size_t n) -> std::optional<std::span<const uint8_t>> {
              static const std::array<uint8_t, 8> nops{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
              auto it = calls.find(a);
              if (it != calls.end() && n <= 5) return std::span<const uint8_t>(it->second.data(), n);
              if (n <= nops.size()) return std::span<const uint8_t>(nops.data(), n);
              return std::nullopt;
            }};
  }
};

const uint8_t kKey[16] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
std::span<const uint8_t, 16> key() { return std::span<const uint8_t, 16>(kKey, 16); }

AnalysisRecord sample(const FakeBinary& bin) {
  AnalysisRecord r;
  r.callSites[0x401000] = CallSiteProof{{0x402010, 0x403020}, std::nullopt};
  r.callSites[0x404000] = CallSiteProof{{}, std::string("its address is stored in .rodata at 0x4c0000")};
  r.inlinedNames = {"main.a", "main.b", "runtime.add"};
  r.inlinedSearched = {"main.a", "runtime.add"};
  InlinedSite s{"main.a", &bin.fns.at(0x405000), "x.go", 12, {0x405010}, "the body's first instruction, passed once per call"};
  s.callIndex = 0;
  r.inlined.push_back(s);
  InlinedSite t{"runtime.add", &bin.fns.at(0x405000), "y.go", 3, {}, "left out: a loop inside the body comes back to its first instruction 0x405040"};
  t.callIndex = 2;
  t.callerFrameless = true;
  r.inlined.push_back(t);
  return r;
}

std::span<const uint8_t> bytesOf(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

TEST_CASE("analysis record: what is written is read back, field by field") {
  FakeBinary bin;
  const AnalysisRecord r = sample(bin);
  const std::string file = serializeAnalysis(r, key());
  std::string why;
  auto back = parseAnalysis(bytesOf(file), key(), bin.checks(), &why);
  REQUIRE_MESSAGE(back, why);
  CHECK(back->callSites.size() == 2);
  CHECK(back->callSites.at(0x401000).sites == std::vector<uint64_t>{0x402010, 0x403020});
  CHECK(!back->callSites.at(0x401000).refused);
  CHECK(back->callSites.at(0x404000).refused == r.callSites.at(0x404000).refused);
  CHECK(back->inlinedNames == r.inlinedNames);
  CHECK(back->inlinedSearched == r.inlinedSearched);
  REQUIRE(back->inlined.size() == 2);
  CHECK(back->inlined[0].callee == "main.a");
  CHECK(back->inlined[0].caller == &bin.fns.at(0x405000));
  CHECK(back->inlined[0].probes == std::vector<uint64_t>{0x405010});
  CHECK(back->inlined[0].callLine == 12);
  CHECK(back->inlined[1].callIndex == 2);
  CHECK(back->inlined[1].callerFrameless);
  CHECK(back->inlined[1].reason == r.inlined[1].reason);
  CHECK(serializeAnalysis(*back, key()) == file);
}

TEST_CASE("analysis record: every damaged byte, a cut, or another binary's key is refused") {
  FakeBinary bin;
  const std::string file = serializeAnalysis(sample(bin), key());
  for (size_t i = 0; i < file.size(); i++) {
    std::string bad = file;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    std::string why;
    CHECK_MESSAGE(!parseAnalysis(bytesOf(bad), key(), bin.checks(), &why), "byte ", i);
    CHECK(!why.empty());
  }
  for (size_t n : {size_t{0}, size_t{10}, file.size() / 2, file.size() - 1}) {
    std::string why;
    CHECK(!parseAnalysis(bytesOf(file.substr(0, n)), key(), bin.checks(), &why));
  }
  uint8_t other[16] = {8};
  std::string why;
  CHECK(!parseAnalysis(bytesOf(file), std::span<const uint8_t, 16>(other, 16), bin.checks(), &why));
  CHECK(why == "made for another binary");
}

TEST_CASE("analysis record: a well-formed record that contradicts the binary is refused whole") {
  FakeBinary bin;
  auto refusedWith = [&](const AnalysisRecord& r) {
    std::string why;
    CHECK(!parseAnalysis(bytesOf(serializeAnalysis(r, key())), key(), bin.checks(), &why));
    return why;
  };
  {
    AnalysisRecord r = sample(bin);
    r.callSites[0x401000].sites.push_back(0x406000);  // a nop there, not a call
    CHECK(refusedWith(r) == "a call site is not a call of its entry");
  }
  {
    AnalysisRecord r = sample(bin);
    r.callSites[0x401008] = CallSiteProof{};  // inside a function, not its entry
    CHECK(refusedWith(r) == "a call-site entry is no function's entry");
  }
  {
    AnalysisRecord r = sample(bin);
    r.inlined[0].probes = {0x406010};  // in the next function
    CHECK(refusedWith(r) == "an inlined body's probe is outside its caller");
  }
  {
    AnalysisRecord r = sample(bin);
    r.inlined[0].callee = "main.b";  // never searched: its list would be partial
    CHECK(refusedWith(r) == "an inlined body of a name not searched");
  }
  {
    AnalysisRecord r = sample(bin);
    std::swap(r.inlined[0], r.inlined[1]);
    CHECK(refusedWith(r) == "inlined bodies out of order");
  }
}
