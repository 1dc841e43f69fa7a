// goscope calibrate: measure again what a probe hit costs on this host and
// rewrite the cache every plan reads (docs/overhead.md). The first probing
// command measures once per kernel and CPU by itself; this is for when the
// machine's load has changed since, since a measure taken under load steers
// every later plan.
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "api/goscope.hpp"
#include "cli/args.hpp"
#include "cli/command.hpp"

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
  std::fprintf(stderr, "goscope: probe costs %s\n", api::hostCostsCacheLocation().c_str());
  if (args.has("json")) {
    boost::json::object o{{"emulated_ns", std::llround(c.emulatedNs)},
                          {"stepped_ns", std::llround(c.steppedNs)},
                          {"return_ns", std::llround(c.returnNs)},
                          {"source", c.source},
                          {"delve_stop_ns", std::llround(c.delveStopNs)},
                          {"delve_source", c.delveSource}};
    std::cout << boost::json::serialize(o) << '\n';
    return 0;
  }
  std::printf("a probe hit here: %.2f us emulated, %.1f us single-stepped, %.1f us at a RET (%s)\n", c.emulatedNs / 1e3,
              c.steppedNs / 1e3, c.returnNs / 1e3, c.source.c_str());
  std::printf("a Delve hit: %.2f ms (%s)\n", c.delveStopNs / 1e6, c.delveSource.c_str());
  return 0;
}

}  // namespace goscope::cli
