// Progress of the slow parts of setting up (choosing probe sites in a big
// binary, placing thousands of probes), for a person watching a terminal,
// and the time since goscope started, which the "attached" lines report.
// The layers below the CLI report; the CLI decides whether and how to show.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace goscope {

// (what, done, total): "choosing probe sites", 12000, 41195. done == total: finished.
using ProgressHook = std::function<void(const std::string& what, size_t done, size_t total)>;
void setProgressHook(ProgressHook hook);
void reportProgress(const std::string& what, size_t done, size_t total);

// Seconds since this process started (its first static initialisation).
double secondsSinceProcessStart();

}  // namespace goscope
