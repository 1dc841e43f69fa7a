// The messages a newcomer meets in a first hour, each against a real
// fixture: a misspelled function is offered the nearest names of the
// binary's function table; a stripped binary's `read` names --debug-file;
// a non-root `read` says what goscope itself lacks, not Delve; `trace
// --help` says -i goes with --folded; `count --explain` and `trace
// --explain` state the same per-hit costs; a break that was never hit
// reports no stop at hits; a uintptr prints in hex (JSON: a number); the
// call rates of one count session say over what they are counted.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <thread>

#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

std::string pidArg(pid_t pid) { return " -p " + std::to_string(pid) + " "; }

std::string lineWith(const std::string& text, const std::string& needle) {
  for (const auto& l : splitLines(text))
    if (l.find(needle) != std::string::npos) return l;
  return "";
}

}  // namespace

TEST_CASE("first hour: a misspelled function gets the nearest names of the binary") {
  Child c({fixture("counter")});
  std::this_thread::sleep_for(200ms);
  const std::string p = pidArg(c.pid());
  for (const std::string& cmd : {"count" + p + "main.doWrok -d 1", "latency" + p + "main.doWrok -d 1",
                                "trace" + p + "main.doWrok -d 1", "trace --strategy delve" + p + "main.doWrok -d 1",
                                "break --strategy delve" + p + "main.doWrok -d 1",
                                "list -b " + fixture("counter") + " main.doWrok"}) {
    CAPTURE(cmd);
    auto r = runCli(cmd);
    INFO("stderr: " << r.err);
    CHECK(r.exitCode == 5);
    const auto lines = splitLines(r.err);
    REQUIRE_FALSE(lines.empty());
    CHECK(lines.back().find("did you mean main.doWork?") != std::string::npos);
  }
  // Of several names, the one that matched nothing is offered its neighbour.
  auto two = runCli("count" + p + "main.doWork main.tikc -d 1");
  CHECK(two.exitCode == 5);
  CHECK(lineWith(two.err, "matches no function").find("did you mean main.tick?") != std::string::npos);
  // Nothing near: no guess, the general hint.
  auto far = runCli("count" + p + "main.nothingLikeIt -d 1");
  CHECK(far.exitCode == 5);
  CHECK(far.err.find("did you mean") == std::string::npos);
  CHECK(far.err.find("goscope list") != std::string::npos);
  // A glob is not a misspelling of one name.
  auto glob = runCli("count" + p + "'main.doWrok*' -d 1");
  CHECK(glob.exitCode == 5);
  CHECK(glob.err.find("did you mean") == std::string::npos);
  CHECK(waitUntraced(c.pid(), 10s));
  CHECK(c.alive());
}

TEST_CASE("first hour: read on a stripped binary names --debug-file") {
  Child stripped({fixture("counter", "stripped")});
  std::this_thread::sleep_for(200ms);
  auto r = runCli("read" + pidArg(stripped.pid()) + "main.counter");
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == 4);
  REQUIRE(splitLines(r.err).size() == 1);
  CHECK(r.err.find("has no DWARF debug info (stripped)") != std::string::npos);
  CHECK(r.err.find("--debug-file FILE") != std::string::npos);
  CHECK(r.err.find("Delve cannot read") == std::string::npos);
  CHECK(stripped.alive());
  // What the hint says works: the build's DWARF, split off and given apart,
  // serves the direct read.
  Child split({fixture("counter-stripped", "splitdebug")});
  std::this_thread::sleep_for(200ms);
  auto given = runCli("read --debug-file " + fixture("counter.debug", "splitdebug") + pidArg(split.pid()) + "main.counter");
  INFO("stderr: " << given.err);
  CHECK(given.exitCode == 0);
  CHECK(given.out.rfind("main.counter = ", 0) == 0);
  CHECK(split.alive());
}

TEST_CASE("first hour: a read another user may not do says what goscope lacks, not Delve") {
  if (::geteuid() != 0 || run("setpriv --reuid=65534 --regid=65534 --clear-groups -- true").exitCode != 0) {
    MESSAGE("needs root and a working setpriv (util-linux): skipped");
    return;
  }
  Child c({fixture("counter")});
  std::this_thread::sleep_for(200ms);
  auto r = run("timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- " + cliPath() +
               " read" + pidArg(c.pid()) + "main.counter");
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == 6);
  REQUIRE(splitLines(r.err).size() == 1);
  CHECK(r.err.find("read: goscope needs CAP_SYS_PTRACE to read the memory of PID " + std::to_string(c.pid())) !=
        std::string::npos);
  CHECK(r.err.find("it runs as uid 0, goscope as uid 65534") != std::string::npos);
  CHECK(r.err.find("Delve") == std::string::npos);
  CHECK(c.alive());
}

TEST_CASE("first hour: trace --help says -i goes with --folded") {
  auto r = runCli("trace --help");
  REQUIRE(r.exitCode == 0);
  const std::string line = lineWith(r.out, "--interval SECS");
  CAPTURE(line);
  CHECK(line.find("with --folded") != std::string::npos);
  // count's -i stands alone.
  CHECK(lineWith(runCli("count --help").out, "--interval SECS").find("--folded") == std::string::npos);
}

TEST_CASE("first hour: count --explain and trace --explain state the same probe costs") {
  Child c({fixture("counter")});
  std::this_thread::sleep_for(200ms);
  const std::string p = pidArg(c.pid());
  auto count = runCli("count --explain" + p + "main.doWork -d 0.3");
  auto trace = runCli("trace --explain --max-overhead 100" + p + "main.doWork -n 1");
  INFO("count: " << count.err);
  INFO("trace: " << trace.err);
  CHECK(count.exitCode == 0);
  CHECK(trace.exitCode == 0);
  // The BPF figures (before "; a Delve hit": a Delve session may refine that one).
  auto bpfCosts = [](const std::string& err) {
    std::string l = lineWith(err, "costs: a hit here costs");
    return l.substr(0, l.find("; a Delve hit"));
  };
  REQUIRE_FALSE(bpfCosts(count.err).empty());
  CHECK(bpfCosts(count.err) == bpfCosts(trace.err));
  CHECK(waitUntraced(c.pid(), 10s));
  CHECK(c.alive());
}

TEST_CASE("first hour: a break never hit reports no stop at hits") {
  // --burst: doWork runs only on SIGUSR1, which never comes.
  Child c({fixture("counter"), "--burst", "10"}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(c.readLine(ready, 10000));
  auto r = runCli("break --strategy delve" + pidArg(c.pid()) + "main.doWork -d 1");
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == 0);
  const std::string cost = lineWith(r.err, "cost to the target");
  REQUIRE_FALSE(cost.empty());
  CHECK(cost.find("at hits") == std::string::npos);
  auto j = runCli("break --json --strategy delve" + pidArg(c.pid()) + "main.doWork -d 1");
  INFO("stdout: " << j.out);
  CHECK(j.exitCode == 0);
  bool seen = false;
  for (const auto& l : splitLines(j.out))
    if (l.find("\"session_cost\"") != std::string::npos) {
      auto o = boost::json::parse(l).as_object().at("session_cost").as_object();
      CHECK(o.at("stopped_at_hits_ms").to_number<double>() == 0);
      seen = true;
    }
  CHECK(seen);
  CHECK(waitUntraced(c.pid(), 10s));
  CHECK(c.alive());
}

TEST_CASE("first hour: a uintptr argument prints in hex, JSON keeps the number") {
  Child f({fixture("functions"), "--loop"});
  std::this_thread::sleep_for(200ms);
  const std::string spec = "'main.add(x uintptr, y uintptr) uintptr' --force-signature --strategy bpf";
  auto text = runCli("trace" + pidArg(f.pid()) + spec + " -n 1");
  INFO("stderr: " << text.err);
  CHECK(text.exitCode == 0);
  const std::string line = lineWith(text.out, "main.add(");
  CAPTURE(line);
  CHECK(line.find("x=0x2a") != std::string::npos);
  CHECK(line.find("y=0xd") != std::string::npos);
  CHECK(line.find("0x37") != std::string::npos);
  auto json = runCli("trace --json" + pidArg(f.pid()) + spec + " -n 1");
  INFO("json: " << json.out);
  CHECK(json.exitCode == 0);
  CHECK(json.out.find("42") != std::string::npos);
  CHECK(json.out.find("0x2a") == std::string::npos);
  CHECK(waitUntraced(f.pid(), 10s));
  CHECK(f.alive());
}

TEST_CASE("first hour: the budget warning of a count says over what its rate is counted") {
  Child c({fixture("counter")});
  std::this_thread::sleep_for(200ms);
  auto r = runCli("count" + pidArg(c.pid()) + "main.doWork -d 2.5");
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == 0);
  const std::string warning = lineWith(r.err, "warning: the probes take");
  REQUIRE_FALSE(warning.empty());
  CHECK(warning.find("calls/s over the last second x") != std::string::npos);
  CHECK(lineWith(r.err, "cost to the target").find("peak ") != std::string::npos);
  CHECK(waitUntraced(c.pid(), 10s));
  CHECK(c.alive());
}
