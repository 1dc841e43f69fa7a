#include <doctest/doctest.h>

#include "cli/args.hpp"

using namespace goscope::cli;

static const std::vector<OptionSpec> kSpecs = {
    {"pid", 'p', true, "pid"}, {"json", 0, false, "json"}, {"read", 0, true, "var", true}, {"interval", 'i', true, "secs"}};

TEST_CASE("parse flags and positionals") {
  auto a = parseArgs("count", kSpecs, {"-p", "123", "main.*", "--json", "--read=main.x", "--read", "main.y", "-i2"});
  REQUIRE(a);
  CHECK(a->get("pid") == "123");
  CHECK(a->has("json"));
  CHECK(a->all("read") == std::vector<std::string>{"main.x", "main.y"});
  CHECK(a->positional() == std::vector<std::string>{"main.*"});
  CHECK(a->getInt("pid", 0, 1, 1 << 22).value() == 123);
  CHECK(a->getSeconds("interval", 1).value() == 2.0);
}

TEST_CASE("usage errors are reported, not thrown") {
  CHECK_FALSE(parseArgs("list", kSpecs, {"--nope"}));
  CHECK_FALSE(parseArgs("list", kSpecs, {"-p"}));
  CHECK_FALSE(parseArgs("list", kSpecs, {"-p", "1", "-p", "2"}));
  CHECK_FALSE(parseArgs("list", kSpecs, {"--json=yes"}));
  auto a = parseArgs("list", kSpecs, {"-p", "abc"});
  REQUIRE(a);
  auto pid = a->getInt("pid", 0, 1, 1 << 22);
  CHECK_FALSE(pid);
  CHECK(pid.error().kind == goscope::ErrorKind::Usage);
  auto b = parseArgs("list", kSpecs, {"-i", "-1"});
  REQUIRE(b);
  CHECK_FALSE(b->getSeconds("interval", 1));
}

TEST_CASE("double dash ends options") {
  auto a = parseArgs("list", kSpecs, {"--", "--json"});
  REQUIRE(a);
  CHECK_FALSE(a->has("json"));
  CHECK(a->positional() == std::vector<std::string>{"--json"});
}
