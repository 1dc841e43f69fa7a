// util/notice.hpp: the library's notices go to the hook the program set, and
// nowhere visible without one.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "util/notice.hpp"

using namespace goscope;

TEST_CASE("notice: each line reaches the hook, in order, and none without a hook") {
  std::vector<std::string> seen;
  setNoticeHook([&](const std::string& l) { seen.push_back(l); });
  notify("measuring what a probe costs on this host (none cached)");
  notify("probe costs cached");
  CHECK(seen == std::vector<std::string>{"measuring what a probe costs on this host (none cached)", "probe costs cached"});
  setNoticeHook({});
  notify("to the debug log");
  CHECK(seen.size() == 2);
}
