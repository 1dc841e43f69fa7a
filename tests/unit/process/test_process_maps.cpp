#include <doctest/doctest.h>

#include "process/process.hpp"

TEST_CASE("parse /proc/PID/maps lines") {
  goscope::Mapping m;
  REQUIRE(goscope::parseMapsLine("55d0c7a00000-55d0c7a9b000 r-xp 00001000 fe:01 1234567    /usr/bin/my prog", m));
  CHECK(m.start == 0x55d0c7a00000);
  CHECK(m.end == 0x55d0c7a9b000);
  CHECK(m.perms == "r-xp");
  CHECK(m.offset == 0x1000);
  CHECK(m.inode == 1234567);
  CHECK(m.path == "/usr/bin/my prog");
  REQUIRE(goscope::parseMapsLine("7ffd1000-7ffd2000 rw-p 00000000 00:00 0", m));
  CHECK(m.path.empty());
  CHECK_FALSE(goscope::parseMapsLine("garbage", m));
}
