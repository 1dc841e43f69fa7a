// Every bad input to `goscope list`/`info` gives one line on stderr naming the
// problem and its documented exit code — never a crash.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include "support/run.hpp"

using namespace goscope::test;

namespace {

void expectError(const std::string& args, int code, const std::string& needle) {
  CAPTURE(args);
  auto r = runCli(args);
  CHECK(r.exitCode == code);
  CHECK(r.out.empty());
  auto lines = splitLines(r.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("goscope: ", 0) == 0);
  CHECK(lines[0].find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("list: missing file, non-ELF, non-Go ELF") {
  expectError("list -b /nonexistent/prog", 3, "/nonexistent/prog: no such file");
  std::string text = "/tmp/goscope-not-elf-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(text) << "just text\n";
  expectError("list -b " + text, 4, "not an ELF file");
  ::unlink(text.c_str());
  expectError("list -b /bin/true", 4, "not a Go program");
  expectError("info -b /bin/true", 4, "not a Go program");
}

TEST_CASE("list: a PID that does not exist or is not Go") {
  expectError("list -p 4000000", 3, "no process with PID 4000000");
  Child sleeper({"/bin/sleep", "30"});
  expectError("list -p " + std::to_string(sleeper.pid()), 4, "is not a Go program");
  CHECK(sleeper.alive());
}

TEST_CASE("list: usage errors") {
  expectError("list", 2, "give exactly one target");
  expectError("list -b a -p 1", 2, "give exactly one target");
  expectError("list -p abc", 2, "wants a process ID");
  expectError("list --frobnicate", 2, "unknown option --frobnicate");
  expectError("frobnicate", 2, "unknown command");
  expectError("list -b " + fixture("functions") + " '/(/'", 2, "bad regular expression");
}

TEST_CASE("list: a pattern that matches nothing") {
  for (const auto& v : kVariants) expectError("list -b " + fixture("functions", v) + " 'main.nope*'", 5, "no probe-able function matches 'main.nope*'");
}
