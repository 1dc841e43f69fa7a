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
#include "output/output.hpp"
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
  auto out = output::makeOutput(args.has("json"));
  out->calibration(c, now);
  out->flush();
  return 0;
}

}  // namespace goscope::cli
