// placeAtCallSites, the pure half of call-site placement (call_sites.hpp):
// which entry probes give way to call sites, and what is said when they do not.
// The search itself runs on real binaries: tests/runtime/test_call_sites.cpp.
#include <doctest/doctest.h>

#include "binary/call_sites.hpp"

using namespace goscope;
using Kind = ProbeSite::Kind;

namespace {
constexpr uint64_t kEntry = 0x401000;
ProbeSite stepped() { return {kEntry, Kind::SteppedEntry, "no stack check: the first instruction is single-stepped", {}, {}}; }
}  // namespace

TEST_CASE("placeAtCallSites: a proven stepped entry moves to its call sites") {
  CallSiteProof proof{{0x402010, 0x403020, 0x404030}, std::nullopt};
  auto p = placeAtCallSites(stepped(), &proof);
  CHECK(p.kind == Kind::CallSites);
  CHECK(p.address == 0x402010);
  CHECK(p.callSites == proof.sites);
  CHECK(p.callSitesRefused.empty());
  CHECK(p.reason.find("3 call site(s)") != std::string::npos);
  CHECK(kindName(p.kind) == "call-sites");
}

TEST_CASE("placeAtCallSites: any other reference, no call at all, or no search keeps the entry, with the reason") {
  CallSiteProof taken{{0x402010}, std::string("its address is stored in .rodata at 0x4c0000")};
  auto p = placeAtCallSites(stepped(), &taken);
  CHECK(p.kind == Kind::SteppedEntry);
  CHECK(p.address == kEntry);
  CHECK(p.callSites.empty());
  CHECK(p.callSitesRefused == "its address is stored in .rodata at 0x4c0000");
  CHECK(p.reason == "no stack check: the first instruction is single-stepped; its call sites are not used: "
                    "its address is stored in .rodata at 0x4c0000");

  CallSiteProof none{};
  CHECK(placeAtCallSites(stepped(), &none).callSitesRefused == "no direct call of it was found");
  CHECK(placeAtCallSites(stepped(), &none).kind == Kind::SteppedEntry);
  CHECK(placeAtCallSites(stepped(), nullptr).callSitesRefused == "its call sites were not searched");
}

TEST_CASE("placeAtCallSites: cheap or impossible entries are left alone") {
  CallSiteProof proof{{0x402010}, std::nullopt};
  for (Kind k : {Kind::StackCheckBranch, Kind::EmulatedEntry, Kind::None}) {
    ProbeSite s{kEntry, k, "why", {}, {}};
    auto p = placeAtCallSites(s, &proof);
    CHECK(p.kind == k);
    CHECK(p.reason == "why");
    CHECK(p.callSitesRefused.empty());
  }
}
