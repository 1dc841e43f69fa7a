// read's limits on how much of each value it loads (ReadLimits), the same
// on the direct path and on Delve's: --max-string, --max-elements and
// --max-depth, with Delve's defaults for a read.
#pragma once

#include <vector>

#include "cli/args.hpp"
#include "probe/probe_request.hpp"

namespace goscope::cli {

std::vector<OptionSpec> readLimitSpecs();

// The limits the options give; a Usage error names the option out of range.
ReadLimits readLimitsOrRaise(const Args& args);

}  // namespace goscope::cli
