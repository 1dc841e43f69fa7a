// goscope latency on zoo's sleeping workers: goroutines sleep 1-5 ms and move
// between threads, deepRecurse grows stacks, mayPanic unwinds through
// recovered panics. Pairing by goroutine must give no mismatches and every
// latency must lie between the shortest requested sleep and a slack.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <map>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/zoo_status.hpp"

using namespace goscope::test;


TEST_CASE("latency: sleeping workers, recursion and panics, every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("latency --json -c '" + fixture("zoo", v) + " --rounds 6 --json' main.sleepWork main.deepRecurse main.mayPanic");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto zoo = lastZooStatus(r.err);
    REQUIRE(zoo.contains("ok"));
    CHECK(zoo["ok"].as_bool());
    auto& calls = zoo["calls"].as_object();
    std::map<std::string, boost::json::object> lat;
    for (const auto& l : splitLines(r.out)) {
      auto o = boost::json::parse(l).as_object();
      if (o.contains("func")) lat[std::string(o["func"].as_string())] = o;  // (and one session_cost object)
    }
    for (const char* f : {"main.sleepWork", "main.deepRecurse", "main.mayPanic"}) {
      CAPTURE(f);
      REQUIRE(lat.count(f));
      auto& o = lat[f];
      for (const char* k : {"func", "count", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "buckets"}) CHECK(o.contains(k));
      CHECK(o["mismatches"].as_int64() == 0);
      CHECK(o["min_ns"].as_int64() <= o["p50_ns"].as_int64());
      CHECK(o["p50_ns"].as_int64() <= o["p90_ns"].as_int64());
      CHECK(o["p90_ns"].as_int64() <= o["p99_ns"].as_int64());
      CHECK(o["p99_ns"].as_int64() <= o["max_ns"].as_int64());
      int64_t inBuckets = 0;
      for (const auto& b : o["buckets"].as_array()) inBuckets += b.as_object().at("count").as_int64();
      CHECK(inBuckets == o["count"].as_int64());
    }
    // Every call that returned normally is timed once: the stack growth of
    // deepRecurse counts once per call, not once per morestack pass.
    CHECK(lat["main.sleepWork"]["count"].as_int64() == calls["main.sleepWork"].as_int64());
    CHECK(lat["main.deepRecurse"]["count"].as_int64() == calls["main.deepRecurse"].as_int64());
    // mayPanic recovers its own panics: it returns every time.
    CHECK(lat["main.mayPanic"]["count"].as_int64() == calls["main.mayPanic"].as_int64());
    // sleepWork sleeps 1 to 5 ms: no latency below 1 ms; the slack above 5 ms
    // is generous because CI machines are shared and noisy.
    CHECK(lat["main.sleepWork"]["min_ns"].as_int64() >= 1000000);
    CHECK(lat["main.sleepWork"]["max_ns"].as_int64() <= 5000000 + 100000000);
    CHECK(lat["main.sleepWork"]["p50_ns"].as_int64() <= 5000000 + 20000000);
  }
}

TEST_CASE("latency: the probes' own cost per call is said beside the histogram") {
  auto text = runCli("latency -c '" + fixture("zoo") + " --rounds 1' main.sleepWork");
  REQUIRE_MESSAGE(text.exitCode == 0, text.err);
  CHECK(text.out.find("  the probes cost ~") != std::string::npos);
  CHECK(text.out.find("part of it is inside each time here") != std::string::npos);
  auto json = runCli("latency --json -c '" + fixture("zoo") + " --rounds 1' main.sleepWork");
  REQUIRE_MESSAGE(json.exitCode == 0, json.err);
  const auto rows = functionObjects(json.out);
  CHECK(!rows.empty());
  for (auto o : rows) {
    // An entry trap and a RET trap: more than the cheapest placement alone
    // (0.35 us by default), less than a millisecond.
    REQUIRE(o.contains("probe_cost_ns"));
    CHECK(o["probe_cost_ns"].as_int64() > 350);
    CHECK(o["probe_cost_ns"].as_int64() < 1000000);
  }
}

// The counter's main.doWork is timed at its two call sites: after one the
// loop's back-edge `jmp` (emulated), after the other a `mov` (stepped). The
// hit counts are per function, so a call's cost is a range, said as one:
// both ends in text, probe_cost_min_ns below probe_cost_ns in JSON
// (docs/overhead.md, "Call sites"). zoo's sleepWork (one kind of end) has
// no range.
TEST_CASE("latency: a function whose calls end at emulated and at stepped instructions is priced as a range") {
  auto listed = runCli("list --json -b " + fixture("counter") + " main.doWork");
  REQUIRE_MESSAGE(listed.exitCode == 0, listed.err);
  REQUIRE(listed.out.find("\"call-sites\"") != std::string::npos);
  Child counter({fixture("counter")});
  const std::string pid = std::to_string(counter.pid());
  auto text = runCli("latency -p " + pid + " main.doWork -d 1");
  REQUIRE_MESSAGE(text.exitCode == 0, text.err);
  CHECK(text.out.find("a call (entry and return: some calls end at an emulated instruction, some at a stepped one") !=
        std::string::npos);
  auto json = runCli("latency --json -p " + pid + " main.doWork -d 1");
  REQUIRE_MESSAGE(json.exitCode == 0, json.err);
  const auto rows = functionObjects(json.out);
  CHECK(!rows.empty());
  for (auto o : rows) {
    REQUIRE(o.contains("probe_cost_min_ns"));
    CHECK(o["probe_cost_min_ns"].as_int64() > 0);
    CHECK(o["probe_cost_min_ns"].as_int64() < o["probe_cost_ns"].as_int64());
  }
  CHECK(counter.alive());
  auto zoo = runCli("latency --json -c '" + fixture("zoo") + " --rounds 1' main.sleepWork");
  REQUIRE_MESSAGE(zoo.exitCode == 0, zoo.err);
  CHECK(zoo.out.find("probe_cost_min_ns") == std::string::npos);
}
