// Which cached measure a plan uses (src/strategy/cost_choice.hpp): the
// lowest recent figure not taken on a much busier machine than now; none
// usable means calibrate (probes) or the default (Delve), with the reason.
#include <doctest/doctest.h>

#include "strategy/cost_choice.hpp"

using namespace goscope;

namespace {
constexpr int64_t kNow = 1'800'000'000;  // 2027-01-15
constexpr int64_t kDay = 86400;

LoadMark at(double load, int64_t ageS = 3600, int cpus = 2) { return {kNow - ageS, load, cpus}; }
LoadMark now(double load, int cpus = 2) { return {kNow, load, cpus}; }
ProbeMeasure probe(double emulated, double stepped, double ret, LoadMark m) { return {emulated, stepped, ret, m}; }
DelveMeasure delve(double ms, LoadMark m) { return {ms * 1e6, 100, ms * 100, m}; }
}  // namespace

TEST_CASE("cost choice: a measure's verdict weighs its age and its load against now") {
  CHECK(judgeMeasure(at(0.5), now(0.5)) == MeasureVerdict::Usable);
  CHECK(judgeMeasure(at(0.5, 8 * kDay), now(0.5)) == MeasureVerdict::TooOld);
  CHECK(judgeMeasure(at(0.5, 6 * kDay), now(0.5)) == MeasureVerdict::Usable);
  CHECK(judgeMeasure(at(0.5, -2 * kDay), now(0.5)) == MeasureVerdict::FromTheFuture);
  // (1 + load per CPU) more than twice now's: set aside.
  CHECK(judgeMeasure(at(24), now(0.5)) == MeasureVerdict::BusierThanNow);  // 13 > 2 x 1.25
  CHECK(judgeMeasure(at(3), now(0.5)) == MeasureVerdict::Usable);          // 2.5 == 2 x 1.25: not more
  CHECK(judgeMeasure(at(3.2), now(0.5)) == MeasureVerdict::BusierThanNow);
  // The same load on more CPUs is a quieter machine.
  CHECK(judgeMeasure(at(24, 3600, 32), now(0.5, 32)) == MeasureVerdict::Usable);
  // Taken at rest, used under load: a lower load is never set aside.
  CHECK(judgeMeasure(at(0.1), now(30)) == MeasureVerdict::Usable);
  // Under load, a measure from a similar load is usable.
  CHECK(judgeMeasure(at(24), now(20)) == MeasureVerdict::Usable);
}

TEST_CASE("cost choice: the lowest usable figure of each placement, and the why") {
  SUBCASE("one measure") {
    auto c = chooseProbeFigures({probe(400, 4000, 3800, at(0.8))}, now(1));
    REQUIRE(c.figures);
    CHECK(c.figures->steppedNs == 4000);
    CHECK(c.usable == 1);
    CHECK(c.why.starts_with("calibrated on this host at load 0.8 on 2 CPUs, 2027-01-15"));
    CHECK(c.why.find("set aside") == std::string::npos);
  }
  SUBCASE("a measure under load beside one at rest: the rest one, under load too") {
    const std::vector<ProbeMeasure> m = {probe(600, 40000, 30000, at(24, 600)), probe(350, 4000, 3700, at(0.5, 7200))};
    for (double load : {0.3, 25.0}) {
      CAPTURE(load);
      auto c = chooseProbeFigures(m, now(load));
      REQUIRE(c.figures);
      CHECK(c.figures->emulatedNs == 350);
      CHECK(c.figures->steppedNs == 4000);
      CHECK(c.figures->returnNs == 3700);
      CHECK(c.why.find("at load 0.5") != std::string::npos);
    }
    // At rest the loaded one is set aside, and said so; under load it is usable, only higher.
    auto rest = chooseProbeFigures(m, now(0.3));
    CHECK(rest.usable == 1);
    CHECK(rest.why.find("set aside: 1 taken on a much busier machine than now (at load 24.0 on 2 CPUs") != std::string::npos);
    CHECK(rest.why.find("now load 0.3 on 2 CPUs") != std::string::npos);
    auto loaded = chooseProbeFigures(m, now(25));
    CHECK(loaded.usable == 2);
    CHECK(loaded.why.find("the lowest of 2 measures here") != std::string::npos);
  }
  SUBCASE("the minima from different measures are named apiece") {
    auto c = chooseProbeFigures({probe(300, 5000, 3700, at(1)), probe(400, 4000, 3600, at(2))}, now(1));
    REQUIRE(c.figures);
    CHECK(c.figures->emulatedNs == 300);
    CHECK(c.figures->steppedNs == 4000);
    CHECK(c.figures->returnNs == 3600);
    CHECK(c.why.find("the lowest of 2 measures: emulated at load 1.0") != std::string::npos);
    CHECK(c.why.find("single-stepped at load 2.0") != std::string::npos);
  }
  SUBCASE("nothing usable: calibrate, saying why") {
    CHECK_FALSE(chooseProbeFigures({}, now(1)).figures);
    CHECK(chooseProbeFigures({}, now(1)).why == "nothing measured on this host yet");
    auto c = chooseProbeFigures({probe(600, 40000, 30000, at(30)), probe(350, 4000, 3700, at(0.5, 9 * kDay))}, now(0.4));
    CHECK_FALSE(c.figures);
    CHECK(c.why.starts_with("set aside: 1 taken on a much busier machine than now (at load 30.0"));
    CHECK(c.why.find("1 taken more than 7 days ago") != std::string::npos);
  }
}

TEST_CASE("cost choice: a Delve stop measured under load does not price plans at rest") {
  // A session at load ~25 measured 70 ms a hit; one at rest 1.2 ms.
  auto both = chooseDelveFigure({delve(70, at(25)), delve(1.2, at(0.6, 2 * kDay))}, now(0.5));
  REQUIRE(both.figure);
  CHECK(both.figure->stopNs == doctest::Approx(1.2e6));
  CHECK(both.why.starts_with("measured here: 100 Delve hits stopped the target 120 ms, at load 0.6"));
  CHECK(both.why.find("set aside: 1 measured on a much busier machine") != std::string::npos);
  // Only the loaded one: the documented default, saying why.
  auto only = chooseDelveFigure({delve(70, at(25))}, now(0.5));
  CHECK_FALSE(only.figure);
  CHECK(only.why.starts_with("default from docs/delve.md (set aside: 1 measured on a much busier machine than now"));
  HostCosts h;
  h.delveStopNs = 5e6;
  applyChoice(h, only);
  CHECK(h.delveStopNs == 1e6);
  CHECK_FALSE(h.delveMeasured);
  // Under a similar load it is the truth of the moment: used.
  auto loaded = chooseDelveFigure({delve(70, at(25))}, now(22));
  REQUIRE(loaded.figure);
  CHECK(loaded.figure->stopNs == doctest::Approx(70e6));
  CHECK(chooseDelveFigure({}, now(1)).why == "default from docs/delve.md (no Delve session measured here yet)");
}

TEST_CASE("cost choice: the cache keeps the newest measures, none too old") {
  std::vector<ProbeMeasure> m;
  for (int i = 0; i < 12; i++) m = keptMeasures(std::move(m), probe(300 + i, 4000, 3700, at(1, 3600 * (12 - i))), now(1));
  CHECK(m.size() == kMaxMeasures);
  CHECK(m.front().emulatedNs == 311);  // the newest first
  CHECK(m.back().emulatedNs == 304);
  const LoadMark later{kNow + 30 * kDay, 1, 2};
  m = keptMeasures(std::move(m), probe(500, 4000, 3700, later), later);
  CHECK(m.size() == 1);  // a month later only the one just added is kept
  CHECK(m.front().emulatedNs == 500);
  // One taken in the same second as the one before it: still the first.
  m = keptMeasures(std::move(m), probe(600, 4000, 3700, later), later);
  REQUIRE(m.size() == 2);
  CHECK(m.front().emulatedNs == 600);
  CHECK(m.back().emulatedNs == 500);
}
