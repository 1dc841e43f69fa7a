#include <doctest/doctest.h>

#include "util/nearest_names.hpp"

using namespace goscope;

namespace {
std::vector<std::string> nearestIn(std::string_view wanted, const std::vector<std::string>& table, size_t most = 3) {
  return nearestNames(wanted, [&](const auto& each) {
    for (const auto& n : table) each(n);
  }, most);
}
}  // namespace

TEST_CASE("edit distance, cut short past its limit") {
  CHECK(editDistance("main.doWork", "main.doWork", 3) == 0);
  CHECK(editDistance("main.doWrok", "main.doWork", 3) == 2);   // a swap is two edits
  CHECK(editDistance("main.doWor", "main.doWork", 3) == 1);
  CHECK(editDistance("kitten", "sitting", 5) == 3);
  CHECK(editDistance("a", "abcdefgh", 2) == 3);                // the lengths alone rule it out
  CHECK(editDistance("abcdefgh", "hgfedcba", 2) == 3);
}

TEST_CASE("nearest names: only close ones, nearest first, at most N") {
  const std::vector<std::string> table = {"main.doWork", "main.doWorker", "main.main", "runtime.doInit", "main.doWork",
                                          "main.add"};
  CHECK(nearestIn("main.doWrok", table) == std::vector<std::string>{"main.doWork"});
  CHECK(nearestIn("main.doWorke", table) == std::vector<std::string>{"main.doWork", "main.doWorker"});
  CHECK(nearestIn("main.doWorke", table, 1) == std::vector<std::string>{"main.doWork"});
  CHECK(nearestIn("main.frobnicate", table).empty());  // nothing close: nothing offered
  CHECK(nearestIn("main.doWork", table).size() == 1);   // itself is not offered; main.doWorker is
  CHECK(nearestIn("x", {"y", "xy", "abc"}) == std::vector<std::string>{"y", "xy"});
}

TEST_CASE("did you mean: one line") {
  CHECK(didYouMean({}).empty());
  CHECK(didYouMean({"main.doWork"}) == "did you mean main.doWork?");
  CHECK(didYouMean({"a", "b"}) == "did you mean a or b?");
  CHECK(didYouMean({"a", "b", "c"}) == "did you mean a, b or c?");
}
