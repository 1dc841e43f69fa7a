// Torture: three goscope processes on one zoo at once — count and latency
// on every main.* and every probe-able runtime.* function, trace with
// arguments on a few main.* functions — for GOSCOPE_TORTURE_SECONDS (default
// 60, what CI runs; docs/reliability.md shows how to run it for an hour).
//
// Exact by construction: zoo is paused between rounds (SIGUSR1, see
// fixtures/go/zoo/pause.go) while the probes are attached and again before
// they are detached, so no counted call is in flight at either end and the
// difference of the two status lines zoo prints there is exactly what every
// goscope must have seen: count's totals and latency's call counts equal it,
// trace has one line per call, with the arguments zoo passes.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <map>
#include <set>

#include "support/goscope_process.hpp"
#include "support/pausable_zoo.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

namespace json = boost::json;

// The final lines of count --json or latency --json: by function, several
// objects when pclntab has several functions of one name (main.Map[...]).
struct Finals {
  std::map<std::string, std::vector<json::object>> byFunc;
  size_t intervalLines = 0, badLines = 0;
  void take(const std::string& line) {
    json::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      badLines++;
      return;
    }
    auto& o = v.as_object();
    if (!o.contains("func")) return;
    if (o.contains("final")) byFunc[std::string(o["func"].as_string())].push_back(o);
    else intervalLines++;
  }
  int64_t sum(const std::string& func, const char* key) const {
    int64_t n = 0;
    if (auto it = byFunc.find(func); it != byFunc.end())
      for (const auto& o : it->second) n += o.at(key).to_number<int64_t>();
    return n;
  }
};

// What zoo passes to, and gets from, the traced functions (fixtures/go/zoo/
// main.go, runRound); every line is checked against it as it arrives.
const std::vector<std::string> kTraced = {"main.divmod",        "main.greet",   "main.checkRecord",
                                          "main.parsePositive", "main.(*Server).Handle", "main.mayPanic"};

struct TraceTally {
  pid_t pid = 0;
  std::map<std::string, int64_t> lines;    // by function
  std::map<std::string, int64_t> byCase;   // "func|argument" -> calls
  int64_t bad = 0;
  std::string firstBad;

  void fail(const std::string& why, const std::string& line) {
    if (bad++ == 0) firstBad = why + ": " + line;
  }
  static json::value j(const char* text) { return json::parse(text); }
  // An error result's message, or its type; "" for anything else.
  static std::string field(const json::value& v, const char* key) {
    if (!v.is_object() || !v.as_object().contains(key) || !v.at(key).is_string()) return "";
    return std::string(v.at(key).as_string());
  }
  static bool isZero(const json::value& v) { return v.is_number() && v.to_number<int64_t>() == 0; }

  void take(const std::string& line) {
    json::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object()) return fail("not JSON", line);
    auto& o = v.as_object();
    if (o.contains("session_cost")) return;  // the stream's last object (issue #11)
    if (!o.contains("func") || !o["func"].is_string()) return fail("no func", line);
    std::string f(o["func"].as_string());
    lines[f]++;
    if (!o.contains("pid") || o["pid"].to_number<int64_t>() != pid) return fail("wrong pid", line);
    if (!o.contains("goid") || o["goid"].to_number<int64_t>() <= 0) return fail("no goid", line);
    if (!o.contains("duration_ns") || !o["duration_ns"].is_number()) return fail("no duration", line);
    const json::value& args = o["args"];
    const json::value& res = o["results"];
    if (!args.is_object() || !res.is_array()) return fail("no args or results", line);
    auto caseOf = [&](const std::string& c) { byCase[f + "|" + c]++; };
    if (f == "main.divmod") {
      if (args != j(R"({"a":17,"b":5})") || res != j("[3,2]")) return fail("divmod", line);
    } else if (f == "main.greet") {
      if (args != j(R"({"name":"gopher"})") || res != j(R"(["hello, gopher"])")) return fail("greet", line);
    } else if (f == "main.checkRecord") {
      if (args != j(R"({"r":{"X":6,"Y":7,"Name":"zoo"}})") || res != j("[45]")) return fail("checkRecord", line);
    } else if (f == "main.parsePositive") {
      const auto& r = res.as_array();
      if (!args.as_object().contains("s") || r.size() != 2) return fail("parsePositive", line);
      std::string s(args.at("s").as_string());
      bool good = (s == "42" && res == j("[42,null]")) ||
                  (s == "-7" && isZero(r[0]) && field(r[1], "error") == "not positive: -7") ||
                  (s == "x" && isZero(r[0]) && field(r[1], "type") == "*strconv.NumError");
      if (!good) return fail("parsePositive", line);
      caseOf(s);
    } else if (f == "main.(*Server).Handle") {
      const auto& a = args.as_object();
      if (!a.contains("s") || !a.at("s").is_object() || a.at("s").at("value") != j(R"({"Name":"api","Port":8080})"))
        return fail("Handle s", line);
      const auto& r = res.as_array();
      if (r.size() != 2) return fail("Handle results", line);
      if (a.at("req") == j(R"({"Path":"/users","ID":7})") && r[0] == j(R"({"Status":200,"Body":"api:/users#7"})") &&
          r[1].is_null())
        caseOf("/users");
      else if (a.at("req") == j(R"({"Path":"/missing","ID":8})") && r[0] == j(R"({"Status":404,"Body":""})") &&
               field(r[1], "error") == "not found")
        caseOf("/missing");
      else
        return fail("Handle", line);
    } else if (f == "main.mayPanic") {
      if (!args.as_object().contains("i") || res.as_array().size() != 2) return fail("mayPanic", line);
      int64_t i = args.at("i").to_number<int64_t>();
      const auto& r = res.as_array();
      bool good;
      if (i % 3 == 0)
        good = isZero(r[0]) && field(r[1], "error") == "recovered: boom " + std::to_string(i);
      else if (i % 5 == 4)
        good = isZero(r[0]) && field(r[1], "error").starts_with("recovered: runtime error: index out of range");
      else
        good = r[0].is_number() && r[0].to_number<int64_t>() == 2 * i && r[1].is_null();
      if (i < 0 || i > 9 || !good) return fail("mayPanic", line);
      caseOf(std::to_string(i));
    } else {
      return fail("a function not asked for", line);
    }
  }
};

// min <= p50 <= p90 <= p99 <= max, mean within [min, max], buckets add up.
bool plausible(const json::object& o, std::string& why) {
  auto n = [&](const char* k) { return o.at(k).to_number<uint64_t>(); };
  uint64_t count = n("count");
  if (count == 0) return true;
  uint64_t inBuckets = 0;
  for (const auto& b : o.at("buckets").as_array()) inBuckets += b.at("count").to_number<uint64_t>();
  bool ok = n("min_ns") <= n("p50_ns") && n("p50_ns") <= n("p90_ns") && n("p90_ns") <= n("p99_ns") &&
            n("p99_ns") <= n("max_ns") && n("min_ns") <= n("mean_ns") && n("mean_ns") <= n("max_ns") &&
            inBuckets == count;
  if (!ok) why = json::serialize(o);
  return ok;
}

}  // namespace

TEST_CASE("torture: count, latency and trace at once on zoo for GOSCOPE_TORTURE_SECONDS" *
          doctest::test_suite("slow")) {
  const long seconds = envNumber("GOSCOPE_TORTURE_SECONDS", 60);
  MESSAGE("torture for " << seconds << " s (GOSCOPE_TORTURE_SECONDS)");
  PausableZoo zoo;
  const pid_t pid = zoo.pid();
  const std::string p = std::to_string(pid);
  REQUIRE(zoo.drain(3000));  // a status line or more: it runs, its checks pass
  ZooStatus before = zoo.pause();
  REQUIRE(before.ok);

  Finals count, latency;
  TraceTally trace;
  trace.pid = pid;
  GoscopeProcess countP({"count", "--json", "-i", "5", "-p", p, "main.*", "runtime.*"},
                        [&](const std::string& l) { count.take(l); });
  GoscopeProcess latencyP({"latency", "--json", "-i", "5", "-p", p, "main.*", "runtime.*"},
                          [&](const std::string& l) { latency.take(l); });
  std::vector<std::string> traceArgs = {"trace", "--json", "-p", p};
  traceArgs.insert(traceArgs.end(), kTraced.begin(), kTraced.end());
  GoscopeProcess traceP(traceArgs, [&](const std::string& l) { trace.take(l); });
  GoscopeProcess* all[] = {&countP, &latencyP, &traceP};
  for (auto* g : all) {
    INFO("goscope stderr: " << g->err());
    REQUIRE(waitUntil([&] { return g->err().find("attached to PID " + p) != std::string::npos || !g->running(); }, 60s));
    REQUIRE(g->running());
  }
  // The probes are in: the checks at the end can see them (int3 in .text,
  // links with zoo's pid).
  CHECK(textDifference(pid, zoo.elf()) != 0);
  CHECK(uprobeMultiLinksFor(pid).size() == 3);

  zoo.resume();
  auto t0 = Clock::now(), lastStatus = t0;
  int64_t lastRounds = before.rounds;
  double cpuAtStatus = cpuSeconds(pid);
  std::chrono::duration<double> longestSilence{0};
  while (Clock::now() - t0 < std::chrono::seconds(seconds)) {
    for (auto* g : all) {
      g->pump();
      INFO("goscope stderr: " << g->err());
      REQUIRE_MESSAGE(g->running(), "a goscope ended during the torture");
    }
    REQUIRE_MESSAGE(alive(pid), "zoo died");
    size_t lines = zoo.statusLines();
    REQUIRE_MESSAGE(zoo.drain(200), "zoo: " << zoo.firstBadLine());
    if (zoo.statusLines() > lines) {  // once a second at rest: it makes progress
      CHECK(zoo.last().rounds >= lastRounds);
      lastRounds = zoo.last().rounds;
      longestSilence = std::max<std::chrono::duration<double>>(longestSilence, Clock::now() - lastStatus);
      lastStatus = Clock::now();
      cpuAtStatus = cpuSeconds(pid);
    }
    // Slow is not stuck. Under ~12,000 probes zoo's status can take a
    // minute where each trap costs several microseconds (the host's, not
    // goscope's: docs/performance.md); a zoo that is stopped, or waits on
    // something that never comes, uses no CPU meanwhile. Silent for 60 s,
    // it must have used a second of CPU since its last status, and it may
    // never be silent for 10 minutes.
    const std::chrono::duration<double> silent = Clock::now() - lastStatus;
    if (silent >= 60s) {
      const double cpu = cpuSeconds(pid) - cpuAtStatus;
      REQUIRE_MESSAGE((cpu >= 1.0 && silent < 600s),
                      "zoo printed no status for " << silent.count() << " s, using " << cpu << " s of CPU meanwhile");
    }
  }

  ZooStatus after = zoo.pause();
  REQUIRE(after.ok);
  const int64_t rounds = after.rounds - before.rounds;
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  MESSAGE(rounds << " rounds of zoo in " << elapsed << " s under count, latency and trace ("
                 << zoo.statusLines() << " status lines, all ok; the longest wait for one " << longestSilence.count()
                 << " s)");
  REQUIRE(rounds > 0);
  for (auto* g : all) g->signal(SIGINT);
  for (auto* g : all) {
    INFO("goscope stderr: " << g->err());
    CHECK(g->wait(120s) != -1);
    CHECK(g->exitedCleanly());
  }
  // Detached: nothing of goscope's is left in zoo.
  CHECK(textDifference(pid, zoo.elf()) == 0);
  CHECK(uprobeMultiLinksFor(pid).empty());
  CHECK(tracerPid(pid) == 0);
  zoo.resume();

  auto delta = [&](const std::string& f) { return after.calls.at(f) - before.calls.at(f); };
  REQUIRE(count.badLines == 0);
  REQUIRE(latency.badLines == 0);
  CHECK(count.intervalLines > 0);
  CHECK(latency.intervalLines > 0);
  CHECK(count.byFunc.size() > 100);  // the runtime was busy too
  CHECK(latency.byFunc.size() > 100);

  // count and latency: exactly zoo's own counts.
  for (const auto& [f, n] : after.calls) {
    if (f == "main.double") continue;  // inlined into main.quadruple: no such function in this binary
    if (f.starts_with("main.Map[")) continue;  // below: pclntab names both instantiations main.Map[...]
    CAPTURE(f);
    CHECK(count.sum(f, "count") == delta(f));
    CHECK(latency.sum(f, "count") == delta(f));
    CHECK(latency.sum(f, "mismatches") == 0);
  }
  CHECK(delta("main.worker") == 0);  // started once, long before
  const int64_t maps = delta("main.Map[go.shape.int_0,go.shape.string_1]") + delta("main.Map[go.shape.string_0,go.shape.int_1]");
  CHECK(count.sum("main.Map[...]", "count") == maps);
  CHECK(latency.sum("main.Map[...]", "count") == maps);
  // The runtime, from what zoo does: 5 panics a round (mayPanic(i) for i in
  // 0, 3, 4, 6, 9), each recovered by a recover() in mayPanic.func1, which
  // runs 10 times a round; a fresh goroutine for deepTask each round.
  CHECK(count.sum("runtime.gopanic", "count") == 5 * rounds);
  CHECK(latency.sum("runtime.gopanic", "count") == 0);  // a recovered panic never returns from gopanic
  CHECK(count.sum("runtime.gorecover", "count") >= 10 * rounds);
  CHECK(count.sum("runtime.newproc", "count") >= rounds);
  CHECK(count.sum("runtime.mallocgc", "count") > 0);
  CHECK(count.sum("runtime.gcStart", "count") > 0);  // allocate() makes work for the collector

  // latency: plausible for every function, and what zoo's own sleeps imply.
  for (const auto& [f, objs] : latency.byFunc)
    for (const auto& o : objs) {
      std::string why;
      CHECK_MESSAGE(plausible(o, why), why);
    }
  auto lat = [&](const std::string& f, const char* k) {
    REQUIRE(latency.byFunc.count(f));
    return latency.byFunc[f][0].at(k).to_number<uint64_t>();
  };
  CHECK(lat("main.sleepWork", "min_ns") >= 1'000'000);   // time.Sleep(1..5 ms) sleeps at least that long
  CHECK(lat("main.processJob", "min_ns") >= 1'000'000);  // it calls sleepWork
  CHECK(lat("main.runRound", "min_ns") >= 2'000'000);    // 16 jobs of >= 1 ms on 8 workers
  CHECK(lat("main.add", "p50_ns") < lat("main.sleepWork", "p50_ns"));
  CHECK(lat("main.runRound", "max_ns") >= lat("main.deepTask", "min_ns"));

  // trace: one line per call, every one with what zoo passed and got back.
  traceP.pump();
  CHECK_MESSAGE(trace.bad == 0, trace.bad << " bad trace lines; the first: " << trace.firstBad);
  for (const auto& f : kTraced) {
    CAPTURE(f);
    CHECK(trace.lines[f] == delta(f));
  }
  for (const char* s : {"42", "-7", "x"}) CHECK(trace.byCase[std::string("main.parsePositive|") + s] == rounds);
  for (const char* path : {"/users", "/missing"}) CHECK(trace.byCase[std::string("main.(*Server).Handle|") + path] == rounds);
  for (int i = 0; i < 10; i++) CHECK(trace.byCase["main.mayPanic|" + std::to_string(i)] == rounds);
  std::string traceErr = traceP.err();
  CHECK(traceErr.find("events lost") == std::string::npos);
  CHECK(traceErr.find("had not returned") == std::string::npos);
  CHECK(traceErr.find("already running") == std::string::npos);
  int64_t traced = 0;
  for (const auto& [f, n] : trace.lines) traced += n;
  MESSAGE("count: " << count.byFunc.size() << " functions seen; latency: " << latency.byFunc.size()
                    << "; trace: " << traced << " lines, all as zoo called them");

  // zoo runs on unharmed, and ends cleanly with its checks all passed.
  REQUIRE(waitUntil([&] { return !zoo.drain(100) || zoo.last().rounds > after.rounds; }, 30s));
  CHECK_MESSAGE(zoo.firstBadLine().empty(), zoo.firstBadLine());
  CHECK(zoo.last().rounds > after.rounds);
  CHECK(textDifference(pid, zoo.elf()) == 0);
  REQUIRE(::kill(pid, SIGTERM) == 0);
  int status = zoo.child().waitExit(30'000);
  CHECK(zoo.drain(0));
  CHECK(zoo.last().ok);
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
