// goscope calibrate: measure again what a probe hit costs on this host and
// add it to the cache every plan reads (docs/overhead.md). A probing command
// measures by itself when no cached measure is usable (none yet, too old,
// or all taken on a much busier machine than now); this measures now, and
// says which measure plans use and why.
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "api/goscope.hpp"
#include "cli/args.hpp"
#include "cli/command.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {
const std::vector<OptionSpec> kSpecs = {{"json", 0, false, "one JSON object"}, {"help", 'h', false, "this help"}};
}

int runCalibrate(const std::vector<std::string>& argv) {
  auto args = orRaise(parseArgs("calibrate", kSpecs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope calibrate [--json]", kSpecs);
    return 0;
  }
  if (!args.positional().empty())
    raise({ErrorKind::Usage, "calibrate: unexpected argument '" + args.positional()[0] + "'", "goscope calibrate [--json]"});
  const HostCosts c = orRaise(api::recalibrate());
  // What was measured now, beside what plans use from now on: the lowest
  // usable measure, an earlier one when it was taken at a lower load.
  const auto now = api::calibratedNow();
  output::toStderr("goscope: probe costs %s\n", api::hostCostsCacheLocation().c_str());
  if (args.has("json")) {
    boost::json::object o{{"emulated_ns", std::llround(c.emulatedNs)},
                          {"stepped_ns", std::llround(c.steppedNs)},
                          {"return_ns", std::llround(c.returnNs)},
                          {"source", c.source},
                          {"delve_stop_ns", std::llround(c.delveStopNs)},
                          {"delve_source", c.delveSource}};
    if (now)
      o["measured"] = {{"emulated_ns", std::llround(now->emulatedNs)},
                       {"stepped_ns", std::llround(now->steppedNs)},
                       {"return_ns", std::llround(now->returnNs)},
                       {"load", now->mark.load},
                       {"cpus", now->mark.cpus}};
    std::cout << boost::json::serialize(o) << '\n';
    return 0;
  }
  if (now)
    std::printf("measured now: %.2f us emulated, %.1f us single-stepped, %.1f us at a RET (%s)\n",
                now->emulatedNs / 1e3, now->steppedNs / 1e3, now->returnNs / 1e3, describeMark(now->mark).c_str());
  std::printf("plans use: %.2f us emulated, %.1f us single-stepped, %.1f us at a RET (%s)\n", c.emulatedNs / 1e3,
              c.steppedNs / 1e3, c.returnNs / 1e3, c.source.c_str());
  std::printf("a Delve hit: %.2f ms (%s)\n", c.delveStopNs / 1e6, c.delveSource.c_str());
  return 0;
}

}  // namespace goscope::cli
