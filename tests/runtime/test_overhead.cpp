// goscope overhead on the counter fixture: every mode is measured, and the
// figures have the order the physics implies. Only ratios measured in the
// same run are asserted (medians of 3 interleaved rounds); absolute speeds
// depend on the machine.
#include <doctest/doctest.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <filesystem>

#include <boost/json.hpp>
#include <map>

#include "support/run.hpp"

using namespace goscope::test;

TEST_CASE("overhead --json: every mode, BPF far cheaper than a Delve breakpoint on every hit" *
          doctest::test_suite("measured")) {
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
  // Stopping the process on every hit costs far more than an in-kernel
  // count. doWork is a leaf without a stack check, so count probes its call
  // site in main instead of its entry (an emulated `call`: docs/disassembly.md,
  // "Call-site placement"): one exception a hit, against a Delve stop's
  // round trips through ptrace and dlv.
  CHECK(slowdown("delve-break-every-hit") >= 100 * slowdown("bpf-count"));
  // The call site is far cheaper than the plain entry that --entry and
  // bpftrace probe, which the kernel single-steps (a second exception and
  // the out-of-line slot). Both figures come from the target's CPU time,
  // which another process's load does not change.
  auto perHit = [&](const char* m) { return modes[m]["per_hit_ns"].to_number<double>(); };
  CHECK(modes["bpf-count"]["per_hit_from"] == "target_cpu");
  CHECK(modes["bpf-count-entry"]["per_hit_from"] == "target_cpu");
  CHECK(modes["delve-break-every-hit"]["per_hit_from"] == "wall_time");
  CHECK(3 * perHit("bpf-count") < perHit("bpf-count-entry"));
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

namespace {

// A Delve measure as a session records it (host_cost_measures.cpp), marked
// with `load` on this host's CPUs now.
boost::json::object delveMeasure(double stopNs, uint64_t hits, double stoppedMs, double load) {
  return {{"stop_ns", stopNs}, {"hits", hits}, {"stopped_ms", stoppedMs}, {"at", static_cast<int64_t>(::time(nullptr))},
          {"load", load}, {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)}};
}

}  // namespace

TEST_CASE("overhead: goscope calibrate measures again, adds to the cache, and keeps the measured Delve stop") {
  const std::string dir = "/tmp/goscope-calibrate-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::string env = "XDG_CACHE_HOME=" + dir + " ";
  auto first = run(env + cliPath() + " calibrate --json");
  REQUIRE_MESSAGE(first.exitCode == 0, first.err);
  auto a = boost::json::parse(first.out).as_object();
  // A single-stepped probe costs more than an emulated one on every kernel.
  CHECK(a["emulated_ns"].as_int64() > 0);
  CHECK(a["stepped_ns"].as_int64() > a["emulated_ns"].as_int64());
  CHECK(a["return_ns"].as_int64() > a["emulated_ns"].as_int64());
  CHECK(std::string(a["source"].as_string()).starts_with("calibrated on this host at load "));
  // The first measure is the one plans use, marked with the load.
  CHECK(a["measured"].at("stepped_ns") == a["stepped_ns"]);
  CHECK(a["measured"].at("load").to_number<double>() >= 0);
  CHECK(a["measured"].at("cpus").to_number<int64_t>() == ::sysconf(_SC_NPROCESSORS_ONLN));
  const std::string cache = dir + "/goscope/host-costs.json";
  REQUIRE(std::filesystem::exists(cache));
  // A Delve stop a session measured (written as a session would) survives a
  // recalibration of the probe figures.
  auto doc = boost::json::parse(slurpFile(cache)).as_object();
  CHECK(doc["probe_measures"].as_array().size() == 1);
  doc["delve_measures"] = boost::json::array{delveMeasure(2.5e6, 40, 100, 0)};
  { std::ofstream(cache) << boost::json::serialize(doc) << "\n"; }
  auto second = run(env + cliPath() + " calibrate --json");
  REQUIRE_MESSAGE(second.exitCode == 0, second.err);
  auto b = boost::json::parse(second.out).as_object();
  CHECK(b["delve_stop_ns"].as_int64() == 2500000);
  CHECK(std::string(b["delve_source"].as_string()).starts_with("measured here: 40 Delve hits stopped the target 100 ms, at load 0.0"));
  auto reread = boost::json::parse(slurpFile(cache)).as_object();
  CHECK(reread["delve_measures"].as_array().size() == 1);
  CHECK(reread["probe_measures"].as_array().size() == 2);  // added, not replaced
  // The figures plans use, also under the keys an older goscope sharing the
  // cache reads (it would otherwise calibrate again and drop the measures).
  CHECK(reread["stepped_ns"].to_number<double>() == doctest::Approx(b["stepped_ns"].to_number<double>()).epsilon(0.001));
  CHECK(reread["delve_stop_ns"].to_number<double>() == doctest::Approx(2500000.0));
  // Plans use the lowest of the two measures, placement by placement.
  const auto& m = reread["probe_measures"].as_array();
  CHECK(b["stepped_ns"].to_number<double>() ==
        doctest::Approx(std::min(m[0].at("stepped_ns").to_number<double>(), m[1].at("stepped_ns").to_number<double>())));
  // The text form names what was measured, what plans use, and the Delve figure.
  auto text = run(env + cliPath() + " calibrate");
  CHECK(text.out.find("measured now: ") != std::string::npos);
  CHECK(text.out.find("plans use: ") != std::string::npos);
  const bool lowestOfThree = text.out.find("(calibrated on this host, the lowest of 3 measures") != std::string::npos ||
                             text.out.find("(the lowest of 3 measures here)") != std::string::npos;
  CHECK_MESSAGE(lowestOfThree, text.out);
  CHECK(text.out.find("a Delve hit: 2.50 ms (measured here: 40 Delve hits") != std::string::npos);
  CHECK(run(env + cliPath() + " calibrate extra").exitCode == 2);
  std::filesystem::remove_all(dir);
}

// A cache whose only measures were taken at a load average of 1000 (as a
// loaded CI machine's would be, only more so): at the load of this run,
// whatever it is, they are set aside; the probe figures are measured again
// (the reason on stderr and in --explain) and the Delve figure is the
// documented default, not the 70 ms a hit measured then. A measure from a
// machine no busier than now is trusted as it is: nothing is measured.
TEST_CASE("calibration: a cache written under load is set aside and measured again, the reason said") {
  const std::string dir = "/tmp/goscope-loadmark-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::string env = "XDG_CACHE_HOME=" + dir + " ";
  auto cal = run(env + cliPath() + " calibrate --json");
  REQUIRE_MESSAGE(cal.exitCode == 0, cal.err);
  const std::string cache = dir + "/goscope/host-costs.json";
  auto doc = boost::json::parse(slurpFile(cache)).as_object();
  auto writeMeasures = [&](double load) {
    auto m = doc["probe_measures"].as_array().at(0).as_object();
    // 988 us a hit: no calibration here gives that figure, so the plan's
    // costs line names it only when it used this measure.
    for (const char* k : {"emulated_ns", "stepped_ns", "return_ns"}) m[k] = 987654.0;
    m["load"] = load;
    m["at"] = static_cast<int64_t>(::time(nullptr));
    auto d = doc;
    d["probe_measures"] = boost::json::array{m};
    d["delve_measures"] = boost::json::array{delveMeasure(70e6, 40, 2800, load)};
    std::ofstream(cache) << boost::json::serialize(d) << "\n";
  };
  Child counter({fixture("counter")});
  const std::string plan = env + cliPath() + " break --explain --strategy bpf -n 3 -p " + std::to_string(counter.pid()) +
                           " main.doWork > /dev/null";

  writeMeasures(1000);
  auto r = run(plan);
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  CHECK(r.err.find("goscope: measuring what a probe costs on this host (set aside: 1 taken on a much busier machine "
                   "than now (at load 1000.0 on ") != std::string::npos);
  // --explain: the new measure, the old one set aside, the Delve default and why.
  CHECK(r.err.find("; calibrated on this host at load ") != std::string::npos);
  CHECK(r.err.find("set aside: 1 taken on a much busier machine than now (at load 1000.0") != std::string::npos);
  CHECK(r.err.find("a Delve hit ~1.0 ms, default from docs/delve.md (set aside: 1 measured on a much busier machine "
                   "than now (at load 1000.0") != std::string::npos);
  CHECK(r.err.find("~988 us (single-stepped)") == std::string::npos);
  auto after = boost::json::parse(slurpFile(cache)).as_object();
  const auto& probes = after["probe_measures"].as_array();
  REQUIRE(probes.size() == 2);  // the new one first; the loaded one kept, set aside while the machine is quieter
  CHECK(probes[0].at("stepped_ns").to_number<double>() != 987654.0);
  CHECK(probes[0].at("load").to_number<double>() < 1000);
  CHECK(probes[1].at("load").to_number<double>() == 1000);

  // A measure no busier than now (load 0): used as it is, nothing measured.
  writeMeasures(0);
  r = run(plan);
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  CHECK(r.err.find("measuring what a probe costs") == std::string::npos);
  CHECK(r.err.find("~988 us (single-stepped)") != std::string::npos);
  CHECK(r.err.find("calibrated on this host at load 0.0 on ") != std::string::npos);
  CHECK(r.err.find("a Delve hit ~70.0 ms, measured here: 40 Delve hits stopped the target 2800 ms, at load 0.0") !=
        std::string::npos);
  CHECK(counter.alive());
  std::filesystem::remove_all(dir);
}

TEST_CASE("overhead: bad input") {
  CHECK(runCli("overhead --modes none,warp").exitCode == 2);
  CHECK(runCli("overhead --func main.doWork").exitCode == 2);
  CHECK(runCli("overhead -p 4000000").exitCode == 3);
}
