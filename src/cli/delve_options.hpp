// What read, sample, break and set share: their options (-p, --json,
// --dlv-arg) and the PID they name.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/args.hpp"

namespace goscope::cli {

std::vector<OptionSpec> delveOptionSpecs(std::vector<OptionSpec> extra);

// -p as a pid; Usage error naming `sub` when it is missing. Also applies
// --debug-file / --debug-dir (applyDebugInfoOptions) for the target it names.
pid_t delvePidOrRaise(const Args& args, const std::string& sub);

}  // namespace goscope::cli
