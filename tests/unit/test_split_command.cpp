#include <doctest/doctest.h>

#include "util/launched_child.hpp"

TEST_CASE("-c command splitting") {
  using V = std::vector<std::string>;
  CHECK(goscope::splitCommand("./counter --report") == V{"./counter", "--report"});
  CHECK(goscope::splitCommand("  prog 'a b'  \"c d\" e") == V{"prog", "a b", "c d", "e"});
  CHECK(goscope::splitCommand("prog ''") == V{"prog", ""});
  CHECK(goscope::splitCommand("   ").empty());
}
