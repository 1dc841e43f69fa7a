// A late interval report says why it was late: goscope's own work (the last
// report's reading and printing, a drain of the stack maps), or a CPU it did
// not get. runSessionLoop on a binary-wide target (-b: no process to watch),
// with a report that takes longer than the interval, and with a wait that
// wakes late without doing anything (as a loaded machine's scheduler does).
#include <doctest/doctest.h>

#include <time.h>

#include <cmath>
#include <vector>

#include "process/traced_target.hpp"
#include "session/session_loop.hpp"
#include "support/run.hpp"

using namespace goscope;

namespace {

TracedTarget binaryWide() {
  TargetSpec spec;
  spec.binary = test::fixture("counter");
  auto t = TracedTarget::open(spec);
  REQUIRE_MESSAGE(t, (t ? "" : t.error().message));
  return std::move(*t);
}

double threadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Works on this thread until it has had `s` seconds of CPU (longer in wall
// time on a loaded machine).
void spinCpu(double s) {
  const double until = threadCpuS() + s;
  volatile double x = 1;
  while (threadCpuS() < until) x = std::sqrt(x + 1);
}

}  // namespace

TEST_CASE("session loop: a report late because the last one took long counts that work as goscope's own") {
  TracedTarget target = binaryWide();
  std::vector<IntervalDue> dues;
  LoopOptions o;
  o.intervalS = 0.2;
  o.finished = [&] { return dues.size() >= 2; };  // no -d: a loaded machine stretches the report
  runSessionLoop(target, o, [](double until) { sleepUntil(until); },
                 [&](const IntervalDue& d) {
                   dues.push_back(d);
                   // The first report's reading and printing take 0.55 s: the
                   // next two intervals come due meanwhile.
                   if (dues.size() == 1) spinCpu(0.55);
                 });
  REQUIRE(dues.size() >= 2);
  const IntervalDue& late = dues[1];
  INFO("late " << late.lateS << " s, overdue " << late.overdueS << " s, own work " << late.ownS << " s, skipped "
                << late.skipped);
  CHECK(late.skipped >= 1);
  CHECK(late.overdueS >= late.lateS);
  // The first interval folded in was due 0.2 s into the report, which then
  // worked 0.35 s of CPU at least: goscope's own, however loaded the machine.
  CHECK(late.ownS >= 0.34);
  CHECK(late.ownS <= late.overdueS + 1e-9);
}

TEST_CASE("session loop: a report late because the loop woke late, doing nothing, says no own work") {
  TracedTarget target = binaryWide();
  std::vector<IntervalDue> dues;
  LoopOptions o;
  o.intervalS = 0.2;
  o.finished = [&] { return !dues.empty(); };
  bool slept = false;
  runSessionLoop(target, o,
                 [&](double until) {
                   // One wake-up 0.45 s late, asleep all the while: what a
                   // machine that did not run goscope looks like to the loop.
                   if (!slept && until > 0) {
                     slept = true;
                     sleepUntil(until + 0.45);
                     return;
                   }
                   sleepUntil(until);
                 },
                 [&](const IntervalDue& d) { dues.push_back(d); });
  REQUIRE(!dues.empty());
  const IntervalDue& late = dues[0];
  INFO("late " << late.lateS << " s, overdue " << late.overdueS << " s, own work " << late.ownS << " s");
  CHECK(late.lateS >= 0.1);
  CHECK(late.ownS < 0.1 * late.overdueS);
}

TEST_CASE("session loop: an end read late after a long report counts the work after the end as goscope's own") {
  TracedTarget target = binaryWide();
  LoopOptions o;
  o.intervalS = 0.2;
  o.durationS = 1.0;
  int reports = 0;
  LoopEnd end = runSessionLoop(target, o, [](double until) { sleepUntil(until); },
                               [&](const IntervalDue&) {
                                 // The first report (due 0.8 s before -d's end)
                                 // works 1.5 s of CPU: 0.7 s of it at least
                                 // after the end, however loaded the machine.
                                 if (++reports == 1) spinCpu(1.5);
                               });
  REQUIRE(reports >= 1);
  REQUIRE(end.why == EndReason::Duration);
  INFO("end late " << end.lateS << " s, own work " << end.ownS << " s");
  CHECK(end.lateS >= 0.7);
  // At least the work after the end; more than the lateness never (on a
  // loaded machine the rest of it is time goscope was not run).
  CHECK(end.ownS >= 0.69);
  CHECK(end.ownS <= end.lateS + 1e-9);
}
