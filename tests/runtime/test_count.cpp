// goscope count on real processes: exact call counts on every variant, for a
// command started by goscope (-c), a running process (-p) and every process
// of a binary (-b); the target survives and stays correct.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <map>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;


TEST_CASE("count -c: exact calls from the first instruction, every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("count --json -c '" + fixture("fibonacci", v) + " --repeat 2' 'main.fib*'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto c = finalCounts(r.out);
    // fibonacciRecursive(20) makes 21891 calls (2*F(21)-1), fibonacciCache(30)
    // 59, fibonacciLoop 1; --repeat 2 doubles them.
    CHECK(c["main.fibonacciRecursive"] == 2 * 21891);
    CHECK(c["main.fibonacciCache"] == 2 * 59);
    CHECK(c["main.fibonacciLoop"] == 2);
    // The target's own output went to stderr, not into the JSON stream.
    CHECK(r.err.find("fibonacciRecursive(20)=6765") != std::string::npos);
  }
}

TEST_CASE("count -p: attach to a waiting process, count, target finishes correctly") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    Child c({fixture("fibonacci", v), "--sleep-ms", "1500", "--repeat", "3"}, true);
    std::string line;
    REQUIRE(c.readLine(line, 5000));
    REQUIRE(line == "ready");
    auto r = runCli("count --json -p " + std::to_string(c.pid()) + " main.fibonacciRecursive main.fibonacciLoop -d 20");
    // Ended because the target exited: totals first, then the line saying
    // so; the session's normal end, exit 0 (exit 8 under --strict: test_session_end.cpp).
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(r.err.find("exited; the session ended with it") != std::string::npos);
    auto counts = finalCounts(r.out);
    CHECK(counts["main.fibonacciRecursive"] == 3 * 21891);
    CHECK(counts["main.fibonacciLoop"] == 3);
    REQUIRE(c.readLine(line, 5000));
    CHECK(line == "fibonacciRecursive(20)=6765 fibonacciCache(30)=832040 fibonacciLoop(40)=102334155");
  }
}

TEST_CASE("count -b: every process running the binary, including ones started later") {
  PrivateCopy copy(fixture("functions"));  // others' runs of the fixture would count too
  const std::string bin = copy.path();
  std::string out;
  GoscopeProcess g({"count", "--json", "-b", bin, "main.add", "-d", "60"}, [&](const std::string& l) { out += l + "\n"; });
  // The processes start once the probes are in, as goscope says: its
  // start-up takes seconds on a loaded machine.
  REQUIRE(waitUntil([&] { return g.err().find("attached to") != std::string::npos || !g.running(); }, 60s));
  REQUIRE_MESSAGE(g.running(), g.err());
  run(bin + " --repeat 5; " + bin + " --repeat 7");
  g.signal(SIGINT);
  const int st = g.wait(20s);
  INFO(g.err());
  REQUIRE(st != -1);
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);
  CHECK(finalCounts(out)["main.add"] == 12);
}

TEST_CASE("count --read: the global's value and rate, target keeps counting") {
  Child c({fixture("counter"), "--report"}, true);
  std::string line;
  REQUIRE(c.readLine(line, 5000));  // counter: N (R ops/s)
  auto r = runCli("count --json -p " + std::to_string(c.pid()) + " main.doWork --read main.counter -i 0.5 -d 2");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  std::vector<int64_t> values, elapsed;
  for (const auto& l : splitLines(r.out)) {
    auto o = boost::json::parse(l).as_object();
    if (o.contains("var")) {
      CHECK(o["var"].as_string() == "main.counter");
      values.push_back(o["value"].as_int64());
      elapsed.push_back(o["elapsed_ms"].as_int64());
    }
  }
  REQUIRE(values.size() >= 3);
  // Each report's value is a later reading; the totals' is the last
  // interval's own reading when -d ends on one (the same moment, the same value).
  for (size_t i = 1; i < values.size(); i++) {
    if (i + 1 == values.size() && elapsed[i] == elapsed[i - 1]) CHECK(values[i] == values[i - 1]);
    else CHECK(values[i] > values[i - 1]);
  }
  // The process is alive and still counting after detach: skip the reports
  // written while we traced, then take a fresh one.
  while (c.readLine(line, 50)) {
  }
  REQUIRE(c.readLine(line, 3000));
  CHECK(c.alive());
  auto n = std::stoll(line.substr(line.find(' ') + 1));
  CHECK(n > values.back());
}

TEST_CASE("count: errors") {
  auto r = runCli("count -p 4000000 main.add");
  CHECK(r.exitCode == 3);
  r = runCli("count -b " + fixture("functions") + " main.nothing -d 1");
  CHECK(r.exitCode == 5);
  r = runCli("count -b " + fixture("functions"));
  CHECK(r.exitCode == 2);
  r = runCli("count -c '/nonexistent/prog' main.add");
  CHECK(r.exitCode == 3);
  r = runCli("count -c '" + fixture("counter", "stripped") + "' main.doWork --read main.counter -d 1");
  CHECK(r.exitCode == 4);
  CHECK(r.err.find("stripped") != std::string::npos);
}
