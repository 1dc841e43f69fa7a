// Logging goes to stderr through spdlog; stdout is for results only.
#pragma once

#include <string>
#include <vector>

namespace goscope {

// Removes -v/--verbose (debug) and -vv (trace) from args and sets the level.
// GOSCOPE_LOG=debug|trace|info does the same from the environment.
void setupLogging(std::vector<std::string>& args);

}  // namespace goscope
