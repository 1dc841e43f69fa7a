// The rate probe's early stop (src/strategy/rate_verdict.hpp): it must answer
// only when the count settles the Delve/BPF choice.
#include <doctest/doctest.h>

#include "strategy/rate_verdict.hpp"

using namespace goscope;

TEST_CASE("rate verdict: nothing is decided before the 50 ms floor or without a limit") {
  CHECK(rateVerdict(100000, 0.049, 10) == RateVerdict::Unclear);
  CHECK(rateVerdict(0, 0.04, 10000) == RateVerdict::Unclear);
  CHECK(rateVerdict(100000, 1.0, 0) == RateVerdict::Unclear);
}

TEST_CASE("rate verdict: a hot function is clearly above the limit at the floor") {
  // 100,000 calls/s against Delve's limit of 10/s (1% of a 1 ms stop).
  CHECK(rateVerdict(5000, 0.05, 10) == RateVerdict::Above);
  // Twice the limit's expected count, but fewer than 10 hits: one burst could do that.
  CHECK(rateVerdict(9, 0.05, 10) == RateVerdict::Unclear);
  CHECK(rateVerdict(10, 0.05, 10) == RateVerdict::Above);
  // Above the limit but not twice it: wait for more.
  CHECK(rateVerdict(15, 0.1, 100) == RateVerdict::Unclear);
}

TEST_CASE("rate verdict: below needs the limit to have promised at least 20 hits, and a quarter at most to come") {
  // Limit 250/s (a 25% budget, 1 ms stop), a 10/s function: after 80 ms the
  // limit expects 20, one came.
  CHECK(rateVerdict(1, 0.08, 250) == RateVerdict::Below);
  CHECK(rateVerdict(1, 0.07, 250) == RateVerdict::Unclear);  // the limit expected 17.5
  CHECK(rateVerdict(6, 0.08, 250) == RateVerdict::Unclear);  // more than a quarter
  CHECK(rateVerdict(5, 0.08, 250) == RateVerdict::Below);
  // A limit of 10/s never expects 20 within the 250 ms window: the whole window runs.
  CHECK(rateVerdict(0, 0.25, 10) == RateVerdict::Unclear);
}
