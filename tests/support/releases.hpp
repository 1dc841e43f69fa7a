// The release matrix: the Go releases whose programs every release-contract
// test runs on (tests/release/), where their fixtures are, and which Delve
// reads each. Go 1.19 is the system's toolchain (the ordinary fixtures);
// 1.21 to 1.27 and Delve 1.24 and 1.27 come from scripts/toolchains.sh's
// cache, and scripts/build-release-fixtures.sh builds
// BUILD/fixtures/go1.NN/{default,stripped,pie}/NAME with them.
//
// A release whose toolchain (or Delve) is not there is skipped with the
// reason and the command that fetches it; under CI=true it fails instead
// (CI fetches every one: .ci/run, scripts/test.sh). Header-only.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/run.hpp"

namespace goscope::test {

inline const std::vector<std::string> kReleases = {"go1.19", "go1.21", "go1.22", "go1.23", "go1.24",
                                                   "go1.25", "go1.26", "go1.27"};
inline const std::vector<std::string> kReleaseVariants = {"default", "stripped", "pie"};
// What build-release-fixtures.sh builds with each release.
inline const std::vector<std::string> kReleaseFixtures = {"zoo", "counter", "leafcalls", "inlined", "fibonacci",
                                                          "allkinds"};

// "go1.24" -> 24.
inline int releaseMinor(const std::string& release) { return std::atoi(release.c_str() + 4); }

inline bool underCi() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// scripts/toolchains.sh's cache, by the same rule (and goscope's own,
// backend/delve/delve_finder.hpp).
inline std::string toolchainCache() {
  if (const char* t = std::getenv("GOSCOPE_TOOLCHAINS"); t && *t) return t;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/goscope/toolchains";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/goscope/toolchains";
  return "/root/.cache/goscope/toolchains";
}

// A matrix entry that cannot run here: skipped with the reason, or failed
// under CI=true. Always returns false, for `if (!ready) return;`.
inline bool cannotRun(const std::string& why) {
  if (underCi()) FAIL_CHECK("CI=true: " << why);
  else MESSAGE("skipped: " << why);
  return false;
}

// A fact a release-contract test established, for the Go support table
// scripts/go-support-table.py builds from these tests' report (docs/go-support.md).
inline void supportFact(const std::string& fact) { MESSAGE("support: " << fact); }

// "go1.24/pie": the fixture variant of one release, for fixture(NAME, ...).
inline std::string releaseVariant(const std::string& release, const std::string& variant) {
  return release + "/" + variant;
}

// GOSCOPE_RELEASES ("go1.19 go1.24 go1.27"), when set, narrows the matrix
// (CI runs part of it: .ci/run); the others are skipped, also under CI.
inline bool releaseSelected(const std::string& release) {
  const char* only = std::getenv("GOSCOPE_RELEASES");
  if (!only || !*only) return true;
  std::string list = std::string(" ") + only + " ";
  for (auto& c : list)
    if (c == '\t' || c == ',') c = ' ';
  return list.find(" " + release + " ") != std::string::npos;
}

// True when every fixture of `release` is built; else why not (cannotRun).
inline bool releaseReady(const std::string& release) {
  if (!releaseSelected(release)) {
    MESSAGE("skipped: " << release << " is not in GOSCOPE_RELEASES (" << std::string(std::getenv("GOSCOPE_RELEASES")) << ")");
    return false;
  }
  for (const auto& v : kReleaseVariants)
    for (const auto& name : kReleaseFixtures) {
      if (std::filesystem::exists(fixture(name, releaseVariant(release, v)))) continue;
      if (release != "go1.19" && !std::filesystem::exists(toolchainCache() + "/" + release + "/.complete"))
        return cannotRun(release + "'s toolchain is not in " + toolchainCache() + ": scripts/toolchains.sh " +
                         release + " fetches it, then ctest -R build_release_fixtures builds its fixtures");
      return cannotRun(fixture(name, releaseVariant(release, v)) + " is not built: scripts/build-release-fixtures.sh " +
                       fixtureDir() + " " + release);
    }
  return true;
}

// The Delve Debian has that reads Go 1.`minor` ("1.20", "1.24", "1.27"),
// or "" when Debian has none (Go 1.21: Delve 1.21 to 1.23).
inline std::string debianDelveFor(int minor) {
  if (minor >= 18 && minor <= 20) return "1.20";
  if (minor >= 22 && minor <= 24) return "1.24";
  if (minor >= 25 && minor <= 27) return "1.27";
  return "";
}

// The dlv that reads `release`, where the system or toolchains.sh put it;
// nullopt, having said why (cannotRun), when it is not there. Not for a
// release that no Debian Delve reads.
inline std::optional<std::string> delveFor(const std::string& release) {
  const std::string want = debianDelveFor(releaseMinor(release));
  REQUIRE(!want.empty());
  if (want == "1.20") {
    if (std::filesystem::exists("/usr/bin/dlv")) return "/usr/bin/dlv";
    cannotRun("Debian 12's Delve is not installed: apt-get install delve (scripts/setup.sh)");
    return std::nullopt;
  }
  const std::string item = "dlv" + want;
  const std::string path = toolchainCache() + "/" + item + "/usr/bin/dlv";
  if (std::filesystem::exists(toolchainCache() + "/" + item + "/.complete")) return path;
  cannotRun("Delve " + want + " is not in " + toolchainCache() + ": scripts/toolchains.sh " + item + " fetches it");
  return std::nullopt;
}

}  // namespace goscope::test
