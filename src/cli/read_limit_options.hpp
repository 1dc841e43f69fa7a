// How much of each value is loaded (ReadLimits): --max-string,
// --max-elements and --max-depth. read's are the same on the direct path and
// on Delve's, with Delve's defaults for a read; sample's are Delve's at each
// hit, with its per-hit defaults (kHitReadLimits).
#pragma once

#include <vector>

#include "cli/args.hpp"
#include "probe/probe_request.hpp"

namespace goscope::cli {

std::vector<OptionSpec> readLimitSpecs(const ReadLimits& defaults = {});

// The limits the options give; a Usage error names the option out of range.
ReadLimits readLimitsOrRaise(const Args& args, const ReadLimits& defaults = {});

}  // namespace goscope::cli
