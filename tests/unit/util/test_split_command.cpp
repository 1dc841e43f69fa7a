#include <doctest/doctest.h>

#include "util/launched_child.hpp"

TEST_CASE("-c command splitting") {
  using V = std::vector<std::string>;
  CHECK(goscope::splitCommand("./counter --report") == V{"./counter", "--report"});
  CHECK(goscope::splitCommand("  prog 'a b'  \"c d\" e") == V{"prog", "a b", "c d", "e"});
  CHECK(goscope::splitCommand("prog ''") == V{"prog", ""});
  CHECK(goscope::splitCommand("   ").empty());
}

TEST_CASE("-- CMD ARGS: the words joined into a -c command that splits back into the same words") {
  using V = std::vector<std::string>;
  for (const V& words : {V{"./prog", "--repeat", "3"}, V{"prog", "a b", ""}, V{"prog", "it's", "say \"hi\""},
                         V{"prog", "'", "\"", "'\"'", "tab\there", "new\nline"}, V{"/bin/sh", "-c", "exec ./prog 'x y'"}}) {
    CAPTURE(goscope::joinCommand(words));
    CHECK(goscope::splitCommand(goscope::joinCommand(words)) == words);
  }
  CHECK(goscope::joinCommand({"./prog", "--repeat", "3"}) == "./prog --repeat 3");  // plain words stay as they are
}
