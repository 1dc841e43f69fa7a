// How a late interval report says why it was late (output/late_text.cpp).
#include <doctest/doctest.h>

#include "output/output.hpp"

using namespace goscope::output;

TEST_CASE("late text: an interval on time says nothing") {
  Output::Interval in;
  CHECK(lateText(in) == "");
}

TEST_CASE("late text: late with little own work blames the scheduler") {
  Output::Interval in;
  in.lateS = 0.42;
  in.ownS = 0.1;
  CHECK(lateText(in) == " (0.42 s late: goscope was not run on time)");
}

TEST_CASE("late text: late mostly by goscope's own work says so, with the intervals covered") {
  Output::Interval in;
  in.lateS = 0.52;
  in.overdueS = 1.52;
  in.ownS = 1.4;
  in.skipped = 1;
  CHECK(lateText(in) == " (0.52 s late, covering 2 intervals: goscope's own work took 1.40 s)");
  // The same own work against a longer wait: mostly not run.
  in.overdueS = 3.0;
  CHECK(lateText(in) == " (0.52 s late, covering 2 intervals: goscope was not run on time)");
}

TEST_CASE("late cause: half the wait is the line between the two causes") {
  CHECK(lateCause(1.0, 0.5) == "goscope's own work took 0.50 s");
  CHECK(lateCause(1.0, 0.49) == "goscope was not run on time");
  CHECK(lateCause(0, 0) == "goscope was not run on time");
}
