// The live accounting behind the overhead bound (session/cost_meter.hpp): pure
// arithmetic over hit counts and per-hit costs.
#include <doctest/doctest.h>

#include "session/cost_meter.hpp"

using namespace goscope;
using namespace goscope::session;

TEST_CASE("cost meter: share, peak and the sustained-over-budget rule") {
  HostCosts costs;
  CostMeter m({{"main.hot", 4000}, {"main.cold", 400}}, costs, 2.0, true);
  // 0.25 s windows: main.hot 2,500 calls (10,000/s x 4 us = 4% of one CPU), main.cold 25.
  m.sample({2500, 25}, 0.25);
  CHECK(m.recentPct() == doctest::Approx(4.0 + 0.004));
  CHECK_FALSE(m.overBudget());  // not yet for a second
  m.sample({5000, 50}, 0.50);
  m.sample({7500, 75}, 0.75);
  CHECK_FALSE(m.overBudget());
  m.sample({10000, 100}, 1.00);
  m.sample({12500, 125}, 1.25);
  CHECK(m.overBudget());
  auto drop = m.dearestToDrop();
  REQUIRE(drop.size() == 1);
  CHECK(drop[0] == 0);
  m.dropped(0);
  m.restartOverBudgetClock();
  CHECK_FALSE(m.overBudget());
  // After the drop only main.cold costs anything.
  m.sample({12500, 150}, 1.50);
  CHECK(m.recentPct() == doctest::Approx(0.004));
  SessionCost c = m.totals(1.5);
  CHECK(c.cpuMs == doctest::Approx((12500 * 4000.0 + 150 * 400.0) / 1e6));
  CHECK(c.peakRate == doctest::Approx(10100));
  CHECK(c.peakFunction == "main.hot");
  CHECK(c.enforced);
  CHECK(describe(c).find("budget 2.00%, enforced") != std::string::npos);
}

TEST_CASE("cost meter: a share that dips under the budget restarts the second") {
  CostMeter m({{"f", 10000}}, HostCosts{}, 1.0, false);
  m.sample({1000}, 0.25);  // 4000/s x 10 us = 4 %
  m.sample({2000}, 0.50);
  m.sample({2000}, 0.75);  // idle: 0 %
  m.sample({3000}, 1.00);
  m.sample({4000}, 1.25);
  CHECK_FALSE(m.overBudget());
  m.sample({5000}, 1.50);
  m.sample({6000}, 1.75);
  CHECK(m.overBudget());
  CHECK(m.warning().find("--max-overhead PCT bounds it") != std::string::npos);
  CHECK(m.warning().find("most in f") != std::string::npos);
}

TEST_CASE("cost meter: dropping stops at what brings the share under the budget") {
  CostMeter m({{"a", 1000}, {"b", 1000}, {"c", 1000}}, HostCosts{}, 1.5, true);
  m.sample({2500, 1250, 250}, 0.25);  // 10,000/s = 1 %, 5,000/s = 0.5 %, 1,000/s = 0.1 %
  auto drop = m.dearestToDrop();
  REQUIRE(drop.size() == 1);
  CHECK(drop[0] == 0);
}

TEST_CASE("cost meter: a Delve-path cost line says stopped, and whether it was measured") {
  SessionCost c;
  c.elapsedS = 2;
  c.stoppedMs = 1800;
  c.stoppedMeasured = true;
  c.budgetPct = 1;
  CHECK(c.sharePct() == doctest::Approx(90));
  CHECK(describe(c).find("stopped 1800.0 ms") != std::string::npos);
  c.stoppedMeasured = false;
  CHECK(describe(c).find("(at least)") != std::string::npos);
}

TEST_CASE("cost meter: the peak and the warning speak of calls per second over a whole second") {
  CostMeter m({{"f", 100000}}, HostCosts{}, 1.0, false);
  // A burst in the last quarter of each second: 4,000/s in that quarter, 1,000/s over the second.
  for (uint64_t s = 0; s < 3; ++s) {
    m.sample({1000 * s}, s + 0.25);
    m.sample({1000 * s}, s + 0.50);
    m.sample({1000 * s}, s + 0.75);
    m.sample({1000 * (s + 1)}, s + 1.00);
  }
  CHECK(m.totals(3).peakRate == doctest::Approx(1000));
  CHECK(m.warning().find("most in f: 1000 calls/s over the last second") != std::string::npos);
  // Shorter than a second: its one window.
  CostMeter brief({{"g", 1000}}, HostCosts{}, 1.0, false);
  brief.sample({50}, 0.25);
  brief.sample({100}, 0.50);
  CHECK(brief.totals(0.5).peakRate == doctest::Approx(200));
  CHECK(brief.totals(0.5).peakFunction == "g");
}

TEST_CASE("cost meter: the BPF programs' measured run time counts from the first sample, so the share since attached holds steady") {
  HostCosts costs;
  CostMeter m({{"main.scale", 1000}}, costs, 1.0, false);
  // 200 calls a second at 1 us of traps each, plus 0.5 us a call the
  // programs ran (their run time starts at 0 when they are loaded).
  for (int s = 1; s <= 4; s++) {
    m.sample({200u * s}, s, 100'000u * s);
    CHECK(m.recentPct() == doctest::Approx(0.03));
    CHECK(m.totals(s).sharePct() == doctest::Approx(0.03));
  }
  CHECK(m.totals(4).cpuMs == doctest::Approx(4 * 0.3));
}
