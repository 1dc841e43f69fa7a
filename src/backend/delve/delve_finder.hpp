// Which dlv goscope runs for a target. Each Delve reads three Go releases
// (delve_window.hpp), so one installed Delve serves only some targets; the
// user may have several (Debian's on $PATH, others that scripts/toolchains.sh
// fetched into the toolchain cache). The rule (docs/delve.md, "Which
// Delve"):
//  1. one the user names: --dlv PATH, else $GOSCOPE_DLV: that one, whatever
//     its window (dlv's own check still refuses a release it does not read);
//  2. else every dlv found, each on $PATH in $PATH's order, then those in the
//     toolchain cache, newest first: the first whose window covers the
//     target's Go release. A Go release that is unknown takes the first found.
// Finding them reads the file system only; a Delve's version costs a
// `dlv version` (one process, cached per path) except in the cache, where
// toolchains.sh recorded it. Versions are asked in order, and only until
// one covers the target.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/delve/delve_window.hpp"

namespace goscope::delve {

struct FoundDelve {
  std::string path;
  std::string origin;                 // "--dlv", "GOSCOPE_DLV", "$PATH", "the toolchain cache"
  std::optional<DelveWindow> window;  // nullopt: not asked, or `dlv version` said nothing usable
  std::string describe() const;       // "Delve 1.24.0 (/x/dlv, the toolchain cache)"
};

struct DelveChoice {
  // What goscope runs: the one that covers the target, the one the user
  // named, or (nothing covers) the first found, which only an attach with
  // --check-go-version=false uses. nullopt: no dlv at all.
  std::optional<FoundDelve> chosen;
  bool covers = false;  // chosen reads the target's Go release (or that release is unknown)
  // One line: which Delve and why ("Delve 1.24.0 (PATH, the toolchain
  // cache) reads Go 1.22 to 1.24, which covers go1.24.4"), or why none.
  std::string why;
  // When nothing covers: which Delve would, and the command that gets it.
  std::string hint;
  // No dlv at all: where goscope looked ("dlv on $PATH or in DIR").
  std::string tried;
  // The windows of the dlvs looked at, when none covers and none was named:
  // "Delve 1.20.2 reads Go 1.18 to 1.20, Delve 1.27.1 reads Go 1.25 to 1.27".
  std::string windows;
};

// The toolchain cache scripts/toolchains.sh fills: $GOSCOPE_TOOLCHAINS, else
// <cacheDir()>/toolchains (~/.cache/goscope/toolchains). Empty when neither
// is known.
std::string toolchainCacheDir();

// Every dlv that rule 2 would look at, in its order, without running any:
// the executable `dlv` of each $PATH directory (one per real file), then
// <cache>/*/usr/bin/dlv whose directory this user owns and nobody else may
// write to, newest recorded version first.
std::vector<FoundDelve> findDelves();

// True when there is a dlv to try: the named one exists, or findDelves() is
// not empty. Runs nothing.
bool anyDelve(const std::string& named);

// The choice for a target built by `goVersion` ("go1.24.4"; "" when
// unknown). `named`: --dlv's path (empty: $GOSCOPE_DLV, then the search).
DelveChoice chooseDelve(const std::string& named, const std::string& goVersion);

// Which Delve reads Go 1.`goMinor`, and the one-line command that gets one
// (scripts/toolchains.sh for the Delves Debian has; go install otherwise).
std::string delveFetchHint(int goMinor);

}  // namespace goscope::delve
