// goscope overhead on the counter fixture: every mode is measured, and the
// figures have the order the physics implies. Only ratios measured in the
// same run are asserted (medians of 3 interleaved rounds); absolute speeds
// depend on the machine.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <map>

#include "support/run.hpp"

using namespace goscope::test;

TEST_CASE("overhead --json: every mode, BPF far cheaper than a Delve breakpoint on every hit") {
  auto r = runCli("overhead --json -w 1 -r 3");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  std::map<std::string, boost::json::object> modes;
  for (const auto& l : splitLines(r.out)) {
    auto o = boost::json::parse(l).as_object();
    modes[std::string(o["mode"].as_string())] = o;
  }
  std::vector<std::string> expected = {"none", "bpf-count", "bpf-count-entry", "bpf-count-read", "delve-sample-1hz", "delve-break-every-hit"};
  if (run("command -v bpftrace").exitCode == 0) expected.push_back("bpftrace");
  for (const auto& m : expected) {
    CAPTURE(m);
    REQUIRE(modes.count(m));
    auto& o = modes[m];
    REQUIRE_MESSAGE(!o.contains("error"), (o.contains("error") ? std::string(o["error"].as_string()) : ""));
    for (const char* k : {"mode", "ops_per_s", "slowdown", "per_hit_ns"}) CHECK(o.contains(k));
    CHECK(o["ops_per_s"].as_int64() > 0);
  }
  auto slowdown = [&](const char* m) { return modes[m]["slowdown"].to_number<double>(); };
  CHECK(slowdown("none") == doctest::Approx(1.0));
  // A probe on every operation slows a tight loop; sampling once a second barely does.
  CHECK(slowdown("bpf-count") > 2);
  CHECK(slowdown("delve-sample-1hz") < slowdown("bpf-count"));
  // Stopping the process on every hit costs far more than an in-kernel count.
  CHECK(slowdown("delve-break-every-hit") >= 100 * slowdown("bpf-count"));
  CHECK(modes["delve-sample-1hz"]["per_hit_ns"].is_null());
  CHECK(modes["bpf-count"]["per_hit_ns"].as_int64() > 0);
  // Beside each measured figure, what the strategy plans with (the same
  // calibrated host figures): a Delve stop dearer than any uprobe.
  for (const auto& m : expected) CHECK(modes[m].contains("expected_per_hit_ns"));
  CHECK(modes["none"]["expected_per_hit_ns"].is_null());
  CHECK(modes["bpf-count"]["expected_per_hit_ns"].as_int64() > 0);
  CHECK(modes["delve-break-every-hit"]["expected_per_hit_ns"].as_int64() >
        10 * modes["bpf-count"]["expected_per_hit_ns"].as_int64());
}

TEST_CASE("overhead: bad input") {
  CHECK(runCli("overhead --modes none,warp").exitCode == 2);
  CHECK(runCli("overhead --func main.doWork").exitCode == 2);
  CHECK(runCli("overhead -p 4000000").exitCode == 3);
}
