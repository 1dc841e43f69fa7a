// The session's cost line can never claim more CPU than the target used
// (docs/overhead.md, "An upper bound from the target's own clock"): with
// per-hit figures 100 us a hit (a calibration under heavy load gives such
// figures), a hot single-threaded loop's estimate is many times its whole
// clock; goscope caps it at that clock and says so. A -b session watches no
// one process and is not capped.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
namespace fs = std::filesystem;

namespace {

// A private cache whose per-hit figures are 100 us for every placement.
struct InflatedCosts {
  std::string dir = "/tmp/goscope-costcap-" + std::to_string(::getpid());
  InflatedCosts() {
    fs::remove_all(dir);
    // This host's identity and figures, as goscope calibrate writes them.
    auto cal = run("XDG_CACHE_HOME=" + dir + " " + cliPath() + " calibrate --json");
    REQUIRE_MESSAGE(cal.exitCode == 0, cal.err);
    const std::string path = dir + "/goscope/host-costs.json";
    auto doc = boost::json::parse(slurpFile(path)).as_object();
    for (const char* k : {"emulated_ns", "stepped_ns", "return_ns"}) doc[k] = 100000.0;
    doc["source"] = "inflated by the test";
    std::ofstream(path) << boost::json::serialize(doc) << "\n";
  }
  ~InflatedCosts() { fs::remove_all(dir); }
  std::string env() const { return "XDG_CACHE_HOME=" + dir + " "; }
};

}  // namespace

TEST_CASE("cost cap: a hot loop priced at 100 us a hit is capped at its own CPU clock, and says so") {
  InflatedCosts costs;
  Child counter({fixture("counter")});
  REQUIRE(waitUntil([&] { return cpuSeconds(counter.pid()) > 0; }, std::chrono::seconds(5)));
  for (const std::string cmd : {"count", "latency", "trace"}) {
    CAPTURE(cmd);
    const double before = 1000 * cpuSeconds(counter.pid());
    auto r = run(costs.env() + cliPath() + " " + cmd + " --json -p " + std::to_string(counter.pid()) +
                 " main.doWork -d 1.5" + (cmd == "trace" ? " > /dev/null" : ""));
    const double used = 1000 * cpuSeconds(counter.pid()) - before;
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(r.err.find("capped at the target's own CPU time: the host's per-hit figures priced") != std::string::npos);
    if (cmd == "trace") continue;  // its JSON went to /dev/null
    auto c = sessionCost(r.out);
    REQUIRE(c);
    INFO(boost::json::serialize(*c), " the counter used ", used, " ms");
    CHECK(c->at("capped").as_bool());
    const double cpu = c->at("cpu_ms").to_number<double>();
    const double clock = c->at("target_cpu_ms").to_number<double>();
    const double estimate = c->at("estimate_cpu_ms").to_number<double>();
    CHECK(cpu == doctest::Approx(clock));
    // Hundreds of thousands of hits a second at 100 us: far above any clock.
    CHECK(estimate > 3 * cpu);
    // The clock is the counter's, inside the run that measured it from outside
    // (a tick either side).
    CHECK(clock <= used + 20);
    CHECK(clock > 0);
  }
}

TEST_CASE("cost cap: a function called now and then is not capped, and -b watches no clock") {
  InflatedCosts costs;
  Child counter({fixture("counter"), "--report"}, true);
  // The report line: one call a second, beside a loop that keeps a CPU busy.
  auto r = run(costs.env() + cliPath() + " count --json -p " + std::to_string(counter.pid()) +
               " fmt.Fprintf -d 1.5");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  auto c = sessionCost(r.out);
  REQUIRE(c);
  INFO(boost::json::serialize(*c));
  CHECK_FALSE(c->at("capped").as_bool());
  CHECK(c->contains("target_cpu_ms"));
  CHECK_FALSE(c->contains("estimate_cpu_ms"));
  CHECK(r.err.find("capped") == std::string::npos);

  PrivateCopy counterCopy(fixture("counter"));  // -b probes every process of the file
  auto b = run(costs.env() + cliPath() + " count --json -b " + counterCopy.path() + " main.doWork -d 0.5");
  REQUIRE_MESSAGE(b.exitCode == 0, b.err);
  auto cb = sessionCost(b.out);
  REQUIRE(cb);
  CHECK_FALSE(cb->contains("target_cpu_ms"));
  CHECK_FALSE(cb->contains("capped"));
}

TEST_CASE("cost cap: a -c program that exits is never capped at a clock that stopped being read") {
  InflatedCosts costs;
  // Fibonacci's 43,782 recursive calls a repeat: seconds at 100 us a hit,
  // in a program that exits after ~0.1 s, before the session's last sample.
  auto r = run(costs.env() + cliPath() + " count --json -c '" + fixture("fibonacci") + " --repeat 2' 'main.fib*'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  auto c = sessionCost(r.out);
  REQUIRE(c);
  INFO(boost::json::serialize(*c));
  const double cpu = c->at("cpu_ms").to_number<double>();
  // Whatever the clock said last, the program ran: never a cost of 0.
  CHECK(cpu > 0.5);
  if (c->contains("capped") && c->at("capped").as_bool()) {
    CHECK(c->at("target_cpu_ms").to_number<double>() == doctest::Approx(cpu));
  } else {
    CHECK(cpu > 1000);  // 2 x 43,900 hits at 100 us
  }
}
