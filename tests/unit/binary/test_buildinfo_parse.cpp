// Parsing the modinfo text cmd/go embeds (runtime/debug.ParseBuildInfo's rules).
#include <doctest/doctest.h>

#include "binary/buildinfo.hpp"

using goscope::BuildInfo;
using goscope::parseModinfo;

TEST_CASE("modinfo: path, main module and build settings in order") {
  BuildInfo bi;
  parseModinfo(
      "path\tgoscope.fixtures/hello\n"
      "mod\tgoscope.fixtures\t(devel)\t\n"
      "dep\tgolang.org/x/sys\tv0.1.0\th1:abc=\n"
      "build\t-compiler=gc\n"
      "build\t-ldflags=\"-s -w\"\n"
      "build\tCGO_ENABLED=1\n"
      "build\tCGO_CFLAGS=\n"
      "build\tvcs.modified=true\n",
      bi);
  CHECK(bi.path == "goscope.fixtures/hello");
  CHECK(bi.mainModule == "goscope.fixtures");
  CHECK(bi.mainVersion == "(devel)");
  REQUIRE(bi.settings.size() == 5);
  CHECK(bi.settings[0] == std::make_pair(std::string("-compiler"), std::string("gc")));
  CHECK(bi.settings[1] == std::make_pair(std::string("-ldflags"), std::string("-s -w")));
  CHECK(bi.settings[3] == std::make_pair(std::string("CGO_CFLAGS"), std::string("")));
  CHECK(bi.settings[4].second == "true");
}

TEST_CASE("modinfo: quoted keys and escaped values are unquoted like strconv.Unquote") {
  BuildInfo bi;
  parseModinfo(
      "build\t\"odd key\"=v\n"
      "build\t-gcflags=\"all=-N -l\"\n"
      "build\tX=\"tab\\there \\\"q\\\" \\u00e9 \\x41\"\n"
      "build\tY=`raw \\n`\n",
      bi);
  REQUIRE(bi.settings.size() == 4);
  CHECK(bi.settings[0].first == "odd key");
  CHECK(bi.settings[0].second == "v");
  CHECK(bi.settings[1].second == "all=-N -l");
  CHECK(bi.settings[2].second == "tab\there \"q\" \xc3\xa9 A");
  CHECK(bi.settings[3].second == "raw \\n");
}

TEST_CASE("modinfo: an unterminated last line and malformed build lines are ignored") {
  BuildInfo bi;
  parseModinfo("path\tp\nbuild\tnoequals\nbuild\t=novalue\nbuild\tk=\"unterminated\nmod\tm\tv1", bi);
  CHECK(bi.path == "p");
  CHECK(bi.settings.empty());
  CHECK(bi.mainModule.empty());  // the mod line has no newline: not a line yet
}
