// The target options every subcommand shares: -b BINARY or -p PID, and where
// a stripped target's debug info is (--debug-file, --debug-dir).
#pragma once

#include <vector>

#include "cli/args.hpp"
#include "process/target.hpp"

namespace goscope::cli {

inline const OptionSpec kBinaryOption{"binary", 'b', true, "a Go executable on disk"};
inline const OptionSpec kPidOption{"pid", 'p', true, "a running Go process"};
// Debug info from elsewhere for a stripped target (docs/debug-info.md).
inline const OptionSpec kDebugFileOption{"debug-file", 0, true,
                                         "read DWARF from this file (the unstripped build, or objcopy --only-keep-debug's output)"};
inline const OptionSpec kDebugDirOption{"debug-dir", 0, true,
                                        "look up debug files by build-id and .gnu_debuglink here (default /usr/lib/debug)", true};

// Sets where targets opened from now on get their debug info
// (setDebugInfoSearch) from --debug-file and --debug-dir; every subcommand
// that opens a target calls it before it does.
void applyDebugInfoOptions(const Args& args);

// Exactly one of -b / -p; throws FatalError (Usage) otherwise. A truncated
// executable is opened with a warning on stderr saying what is lost (info
// and list show what is left; everything else refuses one).
Target openTargetOrRaise(const Args& args, const std::string& subcommand);

}  // namespace goscope::cli
