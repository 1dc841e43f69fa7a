// The overhead bound's rules (session/overhead_bound.hpp), on probes faked here:
// what count/latency and trace/break do once the budget has been exceeded
// for a second, and the differences between them kept as they were.
#include <doctest/doctest.h>

#include "session/overhead_bound.hpp"

using namespace goscope;
using namespace goscope::session;

namespace {

// Probes whose counts and programs' run time the test advances.
struct FakeProbes final : BoundProbes {
  std::vector<uint64_t> counts;
  uint64_t programNs = 0;
  bool failDrop = false;
  bool failSample = false;
  std::vector<std::vector<uint32_t>> drops;
  std::vector<std::pair<uint32_t, uint32_t>> sampled;

  bool sample(CostMeter& meter, double nowS, bool force, bool) override {
    if (!force && nowS - meter.lastSampleS() < 0.25) return false;
    meter.sample(counts, nowS, programNs);
    return true;
  }
  Result<void> sampleEvery(uint32_t id, uint32_t every) override {
    if (failSample) return fail(ErrorKind::External, "no sampling");
    sampled.emplace_back(id, every);
    return {};
  }
  Result<void> drop(const std::vector<uint32_t>& ids) override {
    if (failDrop) return fail(ErrorKind::External, "the links could not be re-created");
    drops.push_back(ids);
    return {};
  }
  uint64_t calls(uint32_t id) const override { return id < counts.size() ? counts[id] : 0; }
};

// Every 0.25 s until `untilS`: each probe's calls at `perS` a second, the
// programs' run time at `programPct` of one CPU; the bound governs each step.
std::vector<BoundAction> run(OverheadBound& b, FakeProbes& p, const std::vector<double>& perS, double programPct,
                             double untilS) {
  std::vector<BoundAction> told;
  for (double t = 0.25; t <= untilS; t += 0.25) {
    for (size_t i = 0; i < perS.size(); i++) p.counts[i] += static_cast<uint64_t>(perS[i] * 0.25);
    p.programNs += static_cast<uint64_t>(programPct / 100 * 0.25e9);
    b.govern(p, t, true, [&](const BoundAction& a) { told.push_back(a); });
  }
  return told;
}

std::unique_ptr<CostMeter> meter(std::vector<CostMeter::Probe> probes, double budgetPct, bool enforce) {
  return std::make_unique<CostMeter>(std::move(probes), HostCosts{}, budgetPct, enforce);
}

}  // namespace

TEST_CASE("overhead bound: count and latency drop the dearest probes until the estimate fits, at once") {
  // 10,000/s, 5,000/s and 1,000/s x 1 us: 1 %, 0.5 % and 0.1 % of one CPU.
  OverheadBound b(meter({{"a", 1000}, {"b", 1000}, {"c", 1000}}, 0.5, true), aggregateBoundRules(true, false));
  FakeProbes p;
  p.counts.assign(3, 0);
  auto told = run(b, p, {10000, 5000, 1000}, 0, 1.0);
  REQUIRE(p.drops.size() == 1);
  CHECK(p.drops[0] == std::vector<uint32_t>({0, 1}));
  REQUIRE(told.size() == 2);
  CHECK(told[0].kind == BoundAction::Kind::Dropped);
  CHECK(told[0].func == "a");
  CHECK(told[0].count == 10000);
  CHECK(told[0].text.find("dropped the probe on a after 10000 calls; the others keep counting") != std::string::npos);
  CHECK(told[1].func == "b");
  REQUIRE(b.droppedAt(0));
  CHECK(*b.droppedAt(0) == doctest::Approx(1.0));
  CHECK(b.droppedCount(1) == 5000);
  CHECK_FALSE(b.droppedAt(2));
  CHECK(b.meter().totals(1.0).actions.size() == 2);
}

TEST_CASE("overhead bound: trace samples the dearest function first, then drops it") {
  // 5,000/s x 1 us = 0.5 % in traps, under the 1 % budget; the programs add 2 %.
  OverheadBound b(meter({{"main.hot", 1000}}, 1.0, true), eventBoundRules(true, true));
  FakeProbes p;
  p.counts.assign(1, 0);
  auto told = run(b, p, {5000}, 2.0, 3.0);
  REQUIRE(told.size() == 2);
  CHECK(told[0].kind == BoundAction::Kind::Sampled);
  CHECK(told[0].sampleEvery == 4);  // a share of 2.5 % over a 1 % budget: the next power of two
  REQUIRE(p.sampled.size() == 1);
  CHECK(p.sampled[0].first == 0);
  CHECK(p.sampled[0].second == 4);
  CHECK(b.sampleEvery(0) == 4);
  CHECK(told[1].kind == BoundAction::Kind::Dropped);
  CHECK(told[1].text.find("dropped the probes on main.hot after") != std::string::npos);
  CHECK(told[1].text.find("sampling could not help") != std::string::npos);
  CHECK(told[1].elapsedS > told[0].elapsedS + 0.9);  // a second over budget again
}

TEST_CASE("overhead bound: traps alone above the budget are dropped without sampling") {
  // 20,000/s x 1 us = 2 % in traps over a 1 % budget: sampling cannot help.
  OverheadBound b(meter({{"main.hot", 1000}}, 1.0, true), eventBoundRules(true, true));
  FakeProbes p;
  p.counts.assign(1, 0);
  auto told = run(b, p, {20000}, 0, 1.5);
  CHECK(p.sampled.empty());
  REQUIRE(told.size() == 1);
  CHECK(told[0].kind == BoundAction::Kind::Dropped);
  CHECK(told[0].text.find("sampling could not help") != std::string::npos);
}

TEST_CASE("overhead bound: break on BPF is not sampled, it drops") {
  OverheadBound b(meter({{"main.hot", 1000}}, 1.0, true), eventBoundRules(true, false));
  FakeProbes p;
  p.counts.assign(1, 0);
  auto told = run(b, p, {5000}, 2.0, 1.5);
  CHECK(p.sampled.empty());
  REQUIRE(told.size() == 1);
  CHECK(told[0].kind == BoundAction::Kind::Dropped);
  CHECK(told[0].text.find("sampling could not help") == std::string::npos);
}

TEST_CASE("overhead bound: a trace whose sampling fails drops instead") {
  OverheadBound b(meter({{"main.hot", 1000}}, 1.0, true), eventBoundRules(true, true));
  FakeProbes p;
  p.counts.assign(1, 0);
  p.failSample = true;
  auto told = run(b, p, {5000}, 2.0, 1.5);
  REQUIRE(told.size() == 1);
  CHECK(told[0].kind == BoundAction::Kind::Dropped);
}

TEST_CASE("overhead bound: without --max-overhead each session warns once, each in its own words") {
  for (bool aggregate : {true, false}) {
    CAPTURE(aggregate);
    OverheadBound b(meter({{"f", 1000}}, 1.0, false),
                    aggregate ? aggregateBoundRules(false, false) : eventBoundRules(false, true));
    FakeProbes p;
    p.counts.assign(1, 0);
    auto told = run(b, p, {20000}, 0, 4.0);
    CHECK(p.drops.empty());
    CHECK(p.sampled.empty());
    REQUIRE(told.size() == 1);
    CHECK(told[0].kind == BoundAction::Kind::Warned);
    CHECK(told[0].text.find("--max-overhead PCT bounds it") != std::string::npos);
    const auto actions = b.meter().totals(4.0).actions;
    REQUIRE(actions.size() == 1);
    CHECK(actions[0] == (aggregate ? "warned at 1 s" : "warned"));
  }
}

TEST_CASE("overhead bound: a failed drop is said by count, retried silently by trace") {
  for (bool aggregate : {true, false}) {
    CAPTURE(aggregate);
    OverheadBound b(meter({{"f", 1000}}, 1.0, true),
                    aggregate ? aggregateBoundRules(true, false) : eventBoundRules(true, true));
    FakeProbes p;
    p.counts.assign(1, 0);
    p.failDrop = true;
    auto told = run(b, p, {20000}, 0, 2.5);  // over budget at 1.0 s and again at 2.0 s
    CHECK(b.meter().totals(2.5).actions.empty());
    if (aggregate) {
      REQUIRE(told.size() == 2);
      CHECK(told[0].kind == BoundAction::Kind::Warned);
      CHECK(told[0].text == "could not drop the dearest probes: the links could not be re-created");
    } else {
      CHECK(told.empty());
    }
    CHECK_FALSE(b.droppedAt(0));
  }
}

TEST_CASE("overhead bound: the last sample, around a detach, never acts") {
  OverheadBound b(meter({{"f", 1000}}, 1.0, true), aggregateBoundRules(true, false));
  FakeProbes p;
  p.counts.assign(1, 0);
  auto told = run(b, p, {20000}, 0, 0.75);
  p.counts[0] += 100000;
  b.govern(p, 5.0, false, [&](const BoundAction& a) { told.push_back(a); });
  CHECK(told.empty());
  CHECK(p.drops.empty());
  CHECK(b.meter().lastSampleS() == doctest::Approx(5.0));
}

TEST_CASE("overhead bound: a Delve session moves to BPF once, after a second of stops over the budget, or warns once") {
  // 200 hits/s priced at 0 a hit; the target stopped 5% of the time (the
  // measured part), over a 1% budget.
  auto delve = [](bool enforce, bool mayMove, double stoppedPct) {
    OverheadBound b(meter({{"main.doWork", 0}}, 1.0, enforce), delveBoundRules(enforce, mayMove));
    FakeProbes p;
    p.counts.assign(1, 0);
    auto told = run(b, p, {200}, stoppedPct, 3.0);
    CHECK(p.drops.empty());
    CHECK(p.sampled.empty());
    return told;
  };
  SUBCASE("enforced, BPF can serve it: moved once, at a second over") {
    auto told = delve(true, true, 5.0);
    REQUIRE(told.size() == 1);
    CHECK(told[0].kind == BoundAction::Kind::Moved);
    CHECK(told[0].func == "main.doWork");
    CHECK(told[0].elapsedS == doctest::Approx(1.0));
    CHECK(told[0].sharePct == doctest::Approx(5.0));
    CHECK(told[0].text ==
          "over budget (the target was stopped 5% of the last second at 200 hits/s > 1.00%): moving the probe from "
          "Delve to BPF; the session goes on (floats print as <unavailable> there)");
  }
  SUBCASE("enforced, BPF cannot serve it: warned once, with why it stays") {
    auto told = delve(true, false, 5.0);
    REQUIRE(told.size() == 1);
    CHECK(told[0].kind == BoundAction::Kind::Warned);
    CHECK(told[0].text.find("warning: the target was stopped 5% of the last second (200 hits/s), above the 1.00% budget; "
                            "BPF cannot serve what was asked") == 0);
  }
  SUBCASE("not enforced: warned once, pointing at --max-overhead") {
    auto told = delve(false, true, 5.0);
    REQUIRE(told.size() == 1);
    CHECK(told[0].kind == BoundAction::Kind::Warned);
    CHECK(told[0].text.find("--max-overhead PCT moves the probe to BPF when it is exceeded") != std::string::npos);
  }
  SUBCASE("under the budget: nothing") { CHECK(delve(true, true, 0.5).empty()); }
}
