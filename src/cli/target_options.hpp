// The target options every subcommand shares: -b BINARY or -p PID.
#pragma once

#include <vector>

#include "cli/args.hpp"
#include "target/target.hpp"

namespace goscope::cli {

inline const OptionSpec kBinaryOption{"binary", 'b', true, "a Go executable on disk"};
inline const OptionSpec kPidOption{"pid", 'p', true, "a running Go process"};

// Exactly one of -b / -p; throws FatalError (Usage) otherwise.
Target openTargetOrRaise(const Args& args, const std::string& subcommand);

}  // namespace goscope::cli
