// The prebuilt Go programs from npm (esbuild, lefthook: Go 1.16 to 1.27)
// that scripts/fetch-go-samples.sh puts in $GOSCOPE_GO_SAMPLES. Tests of
// every Go release take them from here; without the variable they are
// skipped with a message saying how to get them.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

namespace goscope::test {

// The sample binaries, sorted by name; nullopt (said in a MESSAGE) when
// $GOSCOPE_GO_SAMPLES is unset or not a directory. A directory without any
// is a failed REQUIRE.
inline std::optional<std::vector<std::filesystem::path>> goSamples() {
  const char* dir = std::getenv("GOSCOPE_GO_SAMPLES");
  if (!dir || !*dir || !std::filesystem::is_directory(dir)) {
    MESSAGE("GOSCOPE_GO_SAMPLES unset or not a directory: skipped (run scripts/fetch-go-samples.sh DIR and set it to DIR)");
    return std::nullopt;
  }
  std::vector<std::filesystem::path> samples;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && (e.path().filename().string().starts_with("esbuild-") ||
                                e.path().filename().string().starts_with("lefthook-")))
      samples.push_back(e.path());
  std::sort(samples.begin(), samples.end());
  REQUIRE_MESSAGE(!samples.empty(), "no esbuild-* or lefthook-* binaries in " << dir);
  return samples;
}

}  // namespace goscope::test
