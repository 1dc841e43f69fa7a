// goscope's per-user cache directory: $XDG_CACHE_HOME/goscope, or
// ~/.cache/goscope without it (the XDG base directory specification). Under
// sudo that is root's. Holds host-costs.json (the calibrated probe costs) and
// analysis/ (what start-up found in a binary: docs/analysis-cache.md).
#pragma once

#include <string>

namespace goscope {

// Empty when neither variable names an absolute directory.
std::string cacheDir();

// Creates dir (and its parent) with mode 0700 when missing, and says whether
// it can be trusted: a directory owned by this effective user that nobody
// else may write to. A cache another user can write into could make goscope
// probe where it should not; such a directory is not used.
bool makePrivateDir(const std::string& dir);

}  // namespace goscope
