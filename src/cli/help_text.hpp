// What each subcommand's --help says beyond its synopsis and options: the
// typed placeholder of each option's value (SECS, PID, PCT... instead of
// VALUE) and two or three real examples, kept in one table so the help
// screens read alike.
#pragma once

#include <string>

namespace goscope::cli {

// The placeholder for --NAME's value ("SECS" for --interval); "VALUE" when none is known.
std::string valuePlaceholder(const std::string& longName);

// The examples section of `goscope SUB --help` (with the -v line); empty for an unknown SUB.
std::string helpExamples(const std::string& subcommand);

}  // namespace goscope::cli
