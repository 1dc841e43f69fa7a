// What read, sample, break and set share: their options (-p, --json,
// --dlv-arg, --dlv) and the PID they name.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/args.hpp"

namespace goscope::cli {

std::vector<OptionSpec> delveOptionSpecs(std::vector<OptionSpec> extra);

// --dlv PATH: the dlv to run. Without it, $GOSCOPE_DLV; else the first dlv
// on $PATH or in the toolchain cache whose window covers the target's Go
// (docs/delve.md, "Which Delve").
inline const OptionSpec kDlvOption{
    "dlv", 0, true, "the dlv to run (default: $GOSCOPE_DLV, else the dlv on $PATH or in the toolchain cache that reads the target's Go)"};

// -p as a pid; Usage error naming `sub` when it is missing. Also applies
// --debug-file / --debug-dir (applyDebugInfoOptions) for the target it names.
pid_t delvePidOrRaise(const Args& args, const std::string& sub);

}  // namespace goscope::cli
