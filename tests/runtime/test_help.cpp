// Every subcommand's --help: typed placeholders for option values (SECS,
// PID, N, PCT, FILE... never VALUE), examples, and a word about -v (issue #17).
#include <doctest/doctest.h>

#include <regex>

#include "support/run.hpp"

using namespace goscope::test;

TEST_CASE("help: every subcommand's --help has typed placeholders, examples and -v") {
  auto top = runCli("--help");
  REQUIRE(top.exitCode == 0);
  CHECK(top.out.find("-v or --verbose") != std::string::npos);
  size_t subs = 0;
  for (const auto& line : splitLines(top.out)) {
    std::smatch m;
    // "  count      count calls of ..." in the command list
    if (!std::regex_match(line, m, std::regex(R"(  ([a-z]+) {2,}.*)"))) continue;
    const std::string sub = m[1];
    CAPTURE(sub);
    auto r = runCli(sub + " --help");
    CHECK(r.exitCode == 0);
    CHECK(r.out.find("usage: goscope " + sub) == 0);
    CHECK_FALSE(std::regex_search(r.out, std::regex(R"(--[a-z-]+ VALUE)")));  // was: every value read VALUE
    CHECK(r.out.find("\nexamples:\n  goscope " + sub + " ") != std::string::npos);
    CHECK(r.out.find("-v (or --verbose)") != std::string::npos);
    subs++;
  }
  CHECK(subs == 14);
  CHECK(runCli("trace --help").out.find("--svg FILE") != std::string::npos);
  CHECK(runCli("count --help").out.find("--interval SECS") != std::string::npos);
  CHECK(runCli("break --help").out.find("--count N") != std::string::npos);
  CHECK(runCli("trace --help").out.find("--count N") != std::string::npos);
}
