// User signatures on stripped binaries (issue #17, "Signatures on stripped
// binaries"): a signature that cannot be the function's is refused before
// anything is attached, with what disagrees, instead of decoding every call
// from the wrong registers.
#include <doctest/doctest.h>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;

TEST_CASE("signatures: an argument frame that disagrees with the function table is refused with both sizes") {
  // main.add(x int, y int) int: two register arguments, two 8-byte spill slots.
  auto r = runCli("trace -c '" + fixture("functions", "stripped") + " --repeat 1' 'main.add(x int) int'");
  CHECK(r.exitCode == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "goscope: the signature `main.add(x int) int` makes an argument frame of 8 bytes, but the binary's function "
        "table says main.add's is 16 bytes: a value is missing, extra or of another size (hint: check the number and "
        "types of the arguments and results (a method's receiver comes first))\n");
  // A string (16 bytes) for an int: 24 against 16.
  auto s = runCli("trace -c '" + fixture("functions", "stripped") + " --repeat 1' 'main.add(x string, y int) int'");
  CHECK(s.exitCode == 2);
  CHECK(s.err.find("makes an argument frame of 24 bytes, but the binary's function table says main.add's is 16 bytes") !=
        std::string::npos);
  // The right one is taken, on every variant.
  for (const char* v : {"stripped", "pie"}) {
    CAPTURE(v);
    auto ok = runCli("trace --json -c '" + fixture("functions", v) + " --repeat 1' 'main.add(x int, y int) int'");
    REQUIRE_MESSAGE(ok.exitCode == 0, ok.err);
    auto calls = callObjects(ok.out);
    REQUIRE(calls.size() == 1);
    CHECK(calls[0]["args"].as_object().at("y").as_int64() == 13);
  }
}

TEST_CASE("signatures: the same function given two different signatures is an error") {
  auto r = runCli("trace -c '" + fixture("functions", "stripped") +
                  " --repeat 1' 'main.add(x int, y int) int' 'main.add(a int, b int) int'");
  CHECK(r.exitCode == 2);
  CHECK(r.err ==
        "goscope: two signatures for main.add: `main.add(x int, y int) int` and `main.add(a int, b int) int` (hint: give "
        "one signature per function)\n");
  // The same one twice is the same request.
  auto same = runCli("trace --json -c '" + fixture("functions", "stripped") +
                     " --repeat 1' 'main.add(x int, y int) int' 'main.add(x int, y int) int'");
  CHECK_MESSAGE(same.exitCode == 0, same.err);
  CHECK(callObjects(same.out).size() == 1);
}

TEST_CASE("signatures: break accepts the signatures trace accepts, and refuses the same bad ones") {
  Child target({fixture("functions", "stripped"), "--loop"}, true);
  const std::string p = std::to_string(target.pid());
  auto r = runCli("break --json -p " + p + " 'main.add(x int, y int) int' --args -n 2");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  const auto hits = callObjects(r.out);
  REQUIRE(hits.size() == 2);
  for (const auto& h : hits) {
    CHECK(h.at("function").as_string() == "main.add");
    CHECK(h.at("args").at("x").as_int64() == 42);  // the fixture's add(42, 13)
    CHECK(h.at("args").at("y").as_int64() == 13);
  }
  auto bad = runCli("break -p " + p + " 'main.add(x int) int' --args -n 1");
  CHECK(bad.exitCode == 2);
  CHECK(bad.err.find("makes an argument frame of 8 bytes, but the binary's function table says main.add's is 16 bytes") !=
        std::string::npos);
  CHECK(target.alive());
}
