// How a session that ends by itself ends goscope (docs/errors.md): a -p
// target that exits is the normal end (exit 0 and a line saying so, as
// bpftrace), unless --strict (exit 8); a -c command that ends the session
// gives goscope its own exit status (as time and strace); `-- CMD ARGS`
// starts a command as -c does (issue #17).
#include <doctest/doctest.h>

#include <thread>

#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;

TEST_CASE("session end: a -p target that exits ends the session with exit 0 and a line, --strict makes it exit 8") {
  for (const std::string sub : {"count", "latency", "trace", "break", "sample"}) {
    for (const bool strict : {false, true}) {
      CAPTURE(sub);
      CAPTURE(strict);
      // Running for sure (it reported once: about 5 s left), and long enough
      // for a set-up that takes over a second on a loaded machine (break
      // measures the rate first). A fixed sleep after fork raced the exec.
      Counter c({"--duration", "6"});
      const std::string pid = std::to_string(c.pid());
      const std::string what = sub == "sample" ? " --at main.doWork main.counter -i 0.3" : " main.doWork";
      auto r = runCli(sub + " -p " + pid + what + " -d 20" + (strict ? " --strict" : ""));
      INFO("stderr: " << r.err);
      const std::string last = splitLines(r.err).back();
      if (strict) {
        CHECK(r.exitCode == 8);
        CHECK(last.find("exited during the session") != std::string::npos);
        CHECK(last.find("(hint: everything recorded before it exited is printed above)") != std::string::npos);
      } else {
        CHECK(r.exitCode == 0);
        CHECK(r.err.find("goscope: PID " + pid) != std::string::npos);
        CHECK(last.find(" exited; the session ended with it") != std::string::npos);
        CHECK(r.err.find("exited during the session") == std::string::npos);
      }
      CHECK_FALSE(r.out.empty());  // what was recorded comes first
    }
  }
}

TEST_CASE("session end: goscope exits with the -c command's own status when it ends the session") {
  // execer fails to exec a missing program and exits 1, after ~200 ms of main.doWork calls.
  const std::string failing = fixture("execer") + " --after-ms 200 /nonexistent/program";
  for (const std::string sub : {"count", "latency", "trace"}) {
    CAPTURE(sub);
    auto r = runCli(sub + " -c '" + failing + "' main.doWork");
    INFO("stderr: " << r.err);
    CHECK(r.exitCode == 1);
    CHECK(r.err.find("exited with status 1; goscope exits with it") != std::string::npos);
    CHECK_FALSE(r.out.empty());  // the calls before it exited
  }
  auto ok = runCli("count -c '" + fixture("functions") + " --repeat 2' main.add");
  CHECK_MESSAGE(ok.exitCode == 0, ok.err);
  CHECK(ok.err.find("goscope exits with it") == std::string::npos);
  // Ended by -d before the command: goscope's own end, exit 0 (the command is stopped).
  auto cut = runCli("count -d 0.5 -c '" + fixture("counter") + "' main.doWork");
  CHECK_MESSAGE(cut.exitCode == 0, cut.err);
}

TEST_CASE("session end: -- CMD ARGS starts the command as -c does") {
  auto r = runCli("trace --json main.add -- " + fixture("functions") + " --repeat 3");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  size_t calls = 0;
  for (const auto& l : splitLines(r.out)) calls += l.find("\"func\":\"main.add\"") != std::string::npos;
  CHECK(calls == 3);
  // Options before the --, the command's own after it (--repeat is functions', not goscope's).
  auto c = runCli("count --json main.add -- " + fixture("functions") + " --repeat 4");
  REQUIRE_MESSAGE(c.exitCode == 0, c.err);
  CHECK(c.out.find("{\"func\":\"main.add\",\"count\":4,\"final\":true}") != std::string::npos);
  // Words after -- are the command's, -v too (goscope's -v is taken before --):
  // Go's flag package refuses it and exits 2, which goscope passes on.
  auto v = runCli("count main.add -- " + fixture("functions") + " -v");
  CHECK_MESSAGE(v.exitCode == 2, v.err);
  CHECK(v.err.find("flag provided but not defined: -v") != std::string::npos);
  // Its exit status is goscope's, as with -c.
  auto failing = runCli("latency main.doWork -- " + fixture("execer") + " --after-ms 200 /nonexistent/program");
  CHECK_MESSAGE(failing.exitCode == 1, failing.err);
}
