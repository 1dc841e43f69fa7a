// goscope's per-user cache directory: $XDG_CACHE_HOME/goscope, or
// ~/.cache/goscope without it (the XDG base directory specification). Under
// sudo that is root's. Holds host-costs.json (the calibrated probe costs) and
// analysis/ (what start-up found in a binary: docs/analysis-cache.md).
#pragma once

#include <optional>
#include <string>

#include "util/safe_dir.hpp"

namespace goscope {

// The preferred path; empty when neither variable names an absolute directory.
std::string cacheDir();

// The directory the caches really use, opened and checked once per process
// (SafeDir::Trust::Private: owned by this effective user, nobody else may
// write to it; a cache another user can write into could make goscope
// probe where it should not, or write where that user points it):
//   - cacheDir(), created 0700 when missing, when it is such a directory;
//   - else a per-user temporary one, $TMPDIR/goscope-UID (/tmp without
//     TMPDIR), so that a missing or unwritable $HOME, or a foreign-owned
//     cache directory, does not mean a calibration every run;
//   - else (that one taken by another user too) a new private directory for
//     this run alone.
// `note` says why the preferred one was not used (empty when it was);
// `dir` is empty only when no directory at all could be had (note says why).
struct CacheDirectory {
  std::optional<SafeDir> dir;
  std::string note;
  std::string where() const { return dir ? dir->path() : std::string(); }
};
const CacheDirectory& cacheDirectory();

}  // namespace goscope
