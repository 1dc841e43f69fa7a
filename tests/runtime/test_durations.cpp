// Durations and intervals on deadlines (-d N ends at N, every interval due
// is reported, the last one included, each with its true length), results
// at the duration's end (the counters read at N, printed before the detach,
// which is said apart), and `count --read VAR` with or without -i. The
// pacer fixture calls main.scale 100 times a second (paced in 1 ms ticks by
// the clock, --catch-up), so N seconds of it are 100·N calls.
//
// The loaded cases (test suite "loaded") start their own load — three
// spinning processes per CPU, killed by PID at the end — and state their
// bounds from what the load does to a sleeper, measured in the same run.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <cmath>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/cpu_hogs.hpp"
#include "support/goscope_process.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

// The pacer at `rate` calls of main.scale a second by the clock (--catch-up:
// a stall on a loaded machine delays calls, it does not drop them), started
// and ready.
struct Pacer {
  explicit Pacer(int rate) : child({fixture("pacer"), "--rate", std::to_string(rate), "--catch-up"}, true) {
    std::string line;
    REQUIRE(child.readLine(line, 30000));
    REQUIRE(line == "ready");
  }
  // Its own once-a-second reports so far ("pacer: calls=N rate=R ..."): the
  // rates, to tell a pacer the load slowed from a goscope that miscounted.
  std::vector<long> rates() {
    std::vector<long> out;
    static const std::regex report(R"(pacer: calls=\d+ rate=(\d+).*)");
    for (std::string line; child.readLine(line, 20);) {
      std::smatch m;
      if (std::regex_match(line, m, report)) out.push_back(std::stol(m[1]));
    }
    return out;
  }
  Child child;
};

std::string joined(const std::vector<long>& v) {
  std::string s;
  for (long x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

// goscope ARGS, its stdout lines stamped with when the test read them, and
// when it said it was attached and when it exited (seconds since it started).
struct TimedRun {
  std::vector<std::pair<double, std::string>> lines;
  double attachedS = -1, exitedS = -1;
  double worstLateS = 0;  // the test's own 2 ms sleeps during the run: how late the worst woke up (the load)
  int status = -1;
  std::string err;
  // The first stdout line that contains `what`: when it came, -1 if never.
  double when(const std::string& what) const {
    for (const auto& [t, l] : lines)
      if (l.find(what) != std::string::npos) return t;
    return -1;
  }
  // The first stdout line that matches `re` as a whole: when it came, -1 if never.
  double whenMatch(const std::regex& re) const {
    for (const auto& [t, l] : lines)
      if (std::regex_match(l, re)) return t;
    return -1;
  }
  std::vector<std::string> text() const {
    std::vector<std::string> v;
    for (const auto& [t, l] : lines) v.push_back(l);
    return v;
  }
  std::string out() const {
    std::string s;
    for (const auto& [t, l] : lines) s += l + "\n";
    return s;
  }
  // "goscope: detached 1 probe in 41.5 ms": the milliseconds, -1 if not said.
  double detachMs() const {
    std::smatch m;
    static const std::regex said(R"(detached \d+ probes? in ([0-9.]+) ms)");
    return std::regex_search(err, m, said) ? std::stod(m[1]) : -1;
  }
};

TimedRun runTimed(const std::vector<std::string>& args, std::chrono::seconds timeout = 120s) {
  TimedRun r;
  GoscopeProcess* self = nullptr;
  GoscopeProcess g(args, [&](const std::string& l) { r.lines.emplace_back(self->secondsSinceStart(), l); });
  self = &g;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (g.running() && std::chrono::steady_clock::now() < deadline) {
    g.pump();
    if (r.attachedS < 0 && g.err().find(" attached to ") != std::string::npos) r.attachedS = g.secondsSinceStart();
    const auto before = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(2ms);
    r.worstLateS = std::max(r.worstLateS, std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count() - 0.002);
  }
  r.status = g.wait(1s);
  r.exitedS = g.secondsSinceStart();
  if (r.status == -1) r.status = g.kill();
  r.err = g.err();
  return r;
}

// count's text totals begin with this header (the interval tables' is FUNC CALLS RATE TOTAL).
const std::regex kTotalsHeader(R"(FUNC +COUNT)");

// count's final row(s): {"func":...,"count":N,"final":true}.
uint64_t finalCount(const std::string& out, const std::string& func) {
  for (const auto& o : functionObjects(out))
    if (o.contains("final") && o.at("func").as_string() == func) return o.at("count").to_number<uint64_t>();
  return 0;
}

// -d 3 of a 100-a-second function: 280-320 calls (the issue's bound), the
// pacer's own rate beside it.
void countsThreeSeconds(const std::string& context) {
  Pacer pacer(100);
  const auto r = runTimed({"count", "--json", "-p", std::to_string(pacer.child.pid()), "main.scale", "-d", "3"});
  INFO(context << "; stderr: " << r.err);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
  const uint64_t calls = finalCount(r.out(), "main.scale");
  const auto rates = pacer.rates();
  MESSAGE(context << ": count -d 3 counted " << calls << " calls; the pacer's own rates: " << joined(rates)
                  << "; detach " << r.detachMs() << " ms; load " << loadAverage());
  CHECK(calls >= 280);
  CHECK(calls <= 320);
  // The results came before the detach: from the totals to the exit is at
  // least most of the detach goscope reports (when it is long enough to tell).
  const double totalsAt = r.when("\"final\":true");
  REQUIRE(totalsAt > 0);
  if (r.detachMs() > 200) CHECK(r.exitedS - totalsAt >= 0.5 * r.detachMs() / 1000);
  // The detach is said apart: on stderr and in the session_cost object.
  const auto cost = sessionCost(r.out());
  REQUIRE(cost);
  REQUIRE(cost->contains("detach_ms"));
  CHECK(std::abs(cost->at("detach_ms").to_number<double>() - r.detachMs()) < 0.2);
  CHECK(pacer.child.alive());
}

// count -i 1 -d N --read main.calls, text: N interval reports, each with the
// variable's value after its table, and the value once more after the
// totals. Returns the run.
TimedRun intervalsWithRead(int n, const std::string& context) {
  Pacer pacer(100);
  const auto r = runTimed({"count", "-p", std::to_string(pacer.child.pid()), "main.scale", "--read", "main.calls", "-i",
                           "1", "-d", std::to_string(n)});
  INFO(context << "; stdout:\n" << r.out() << "stderr: " << r.err);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
  const std::regex header(R"(\[\d\d:\d\d:\d\d\] (\d+\.\d\d) s( \(.*\))?)"), value(R"(main\.calls: (\d+)( \(\d+ ops/s\))?)"),
      &total = kTotalsHeader;
  int reports = 0, valuesInReports = 0, valuesAfterTotals = 0;
  bool inReport = false, afterTotals = false;
  for (const auto& l : r.text()) {
    std::smatch m;
    if (std::regex_match(l, m, header)) {
      reports++;
      inReport = true;
      // Its true length: an interval of 1 s, read on time or said late.
      const double length = std::stod(m[1]);
      CHECK_MESSAGE((length > 0.8 || m[2].matched), "a report of " << length << " s without a word why: " << l);
    } else if (std::regex_match(l, total)) {
      afterTotals = true;
      inReport = false;
    } else if (std::regex_match(l, m, value)) {
      if (afterTotals) valuesAfterTotals++;
      else if (inReport) valuesInReports++;
      inReport = false;
    }
  }
  MESSAGE(context << ": " << reports << " interval reports, " << valuesInReports << " values in them, "
                  << valuesAfterTotals << " after the totals; attached at " << r.attachedS << " s, totals at "
                  << r.whenMatch(kTotalsHeader) << "/" << r.exitedS << " s (exit), detach " << r.detachMs()
                  << " ms; a 2 ms sleep of the test up to " << r.worstLateS * 1000 << " ms late; load " << loadAverage());
  CHECK(reports == n);
  CHECK(valuesInReports == n);
  CHECK(valuesAfterTotals == 1);
  CHECK(pacer.child.alive());
  return r;
}

}  // namespace

TEST_CASE("durations: count -d 3 of a function called 100 times a second counts 280-320, read before the detach") {
  countsThreeSeconds("at rest");
}

TEST_CASE("durations: count and latency -d print their totals before the detach, and say the detach apart") {
  Pacer pacer(100);
  // One stream for stdout and stderr: the order they were written in.
  for (const auto& [sub, totalsHeader] : {std::pair{"count", "FUNC "}, std::pair{"latency", "  count "}}) {
    CAPTURE(sub);
    auto r = runCli(std::string(sub) + " -p " + std::to_string(pacer.child.pid()) + " main.scale -d 1 2>&1");
    REQUIRE_MESSAGE(r.exitCode == 0, r.out);
    const auto totals = r.out.find(totalsHeader), detached = r.out.find("goscope: detached ");
    REQUIRE_MESSAGE(totals != std::string::npos, r.out);
    REQUIRE_MESSAGE(detached != std::string::npos, r.out);
    CHECK_MESSAGE(totals < detached, r.out);
    CHECK(r.out.find("goscope: duration reached") < detached);
  }
  CHECK(pacer.child.alive());
}

TEST_CASE("durations: count -i 1 -d 3 --read reports three intervals, the last one included, each with the value") {
  intervalsWithRead(3, "at rest");
}

TEST_CASE("durations: count --json -i 1 -d 3: three intervals of their true length, the last at the end of -d") {
  Pacer pacer(100);
  const auto r = runTimed({"count", "--json", "-p", std::to_string(pacer.child.pid()), "main.scale", "--read",
                           "main.calls", "-i", "1", "-d", "3"});
  INFO("stdout:\n" << r.out() << "stderr: " << r.err);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 0);
  std::vector<boost::json::object> intervals, reads;
  for (const auto& o : jsonObjects(r.out())) {
    if (o.contains("var")) reads.push_back(o);
    else if (o.contains("delta")) intervals.push_back(o);
  }
  REQUIRE(intervals.size() == 3);
  uint64_t sum = 0;
  for (size_t i = 0; i < intervals.size(); i++) {
    const auto& o = intervals[i];
    const auto elapsed = o.at("elapsed_ms").as_int64(), length = o.at("interval_ms").as_int64();
    // Due at 1, 2, 3 s after the attach; read on time, or said late.
    const int64_t late = o.contains("late_ms") ? o.at("late_ms").as_int64() : 0;
    CHECK(elapsed >= 1000 * static_cast<int64_t>(i + 1));
    CHECK(elapsed <= 1000 * static_cast<int64_t>(i + 1) + 50 + late);
    CHECK(length >= 950);
    CHECK(length <= 1050 + late);
    sum += o.at("delta").to_number<uint64_t>();
  }
  // The last interval is the totals' reading: they add up exactly.
  CHECK(sum == finalCount(r.out(), "main.scale"));
  // The value with each interval and once at the end, all read.
  REQUIRE(reads.size() == 4);
  for (const auto& o : reads) CHECK(o.at("value").is_int64());
  CHECK(pacer.child.alive());
}

TEST_CASE("durations: count --read VAR without -i prints the value at the end, text and JSON") {
  Pacer pacer(100);
  const std::string pid = std::to_string(pacer.child.pid());
  auto text = runCli("count -p " + pid + " main.scale --read main.calls -d 1");
  REQUIRE_MESSAGE(text.exitCode == 0, text.err);
  CHECK_MESSAGE(std::regex_search(text.out, std::regex(R"(\nmain\.calls: \d+\n)")), text.out);
  auto json = runCli("count --json -p " + pid + " main.scale --read main.calls -d 1");
  REQUIRE_MESSAGE(json.exitCode == 0, json.err);
  bool valued = false;
  for (const auto& o : jsonObjects(json.out))
    if (o.contains("var")) valued = o.at("var").as_string() == "main.calls" && o.at("value").is_int64();
  CHECK_MESSAGE(valued, json.out);
}

TEST_CASE("durations: at load, count -d 3 of a function called 100 times a second counts 280-320" *
          doctest::test_suite("loaded")) {
  CpuHogs hogs;
  const double late = worstWakeupLateness(500ms);
  countsThreeSeconds("at load (" + std::to_string(hogs.size()) + " hogs, a 10 ms sleep up to " +
                     std::to_string(static_cast<int>(late * 1000)) + " ms late)");
}

TEST_CASE("durations: at load, count -i 1 -d 5 --read prints 5 interval reports with the value, results within 6 s" *
          doctest::test_suite("loaded")) {
  CpuHogs hogs;
  const double late = worstWakeupLateness(500ms);
  const auto r = intervalsWithRead(5, "at load (" + std::to_string(hogs.size()) + " hogs, a 10 ms sleep up to " +
                                          std::to_string(static_cast<int>(late * 1000)) + " ms late)");
  REQUIRE(r.attachedS > 0);
  // The results (the totals and the value after them) within 6 s of the
  // attach. The exit comes after the detach goscope reports (an RCU grace
  // period per link: long on a loaded machine, but it delays no result) and
  // the teardown (the link holder's exit, the maps freed: a handful of
  // wake-ups, each as late as the load makes it, measured by the test's own
  // sleeps during the run).
  const double totalsAt = r.whenMatch(kTotalsHeader);
  CHECK(totalsAt > 0);
  CHECK(totalsAt - r.attachedS < 6.0);
  CHECK(r.exitedS - r.attachedS < 6.0 + std::max(0.0, r.detachMs()) / 1000 + 10 * std::max(late, r.worstLateS));
}
