// The release contract: what goscope promises on a program built by each Go
// release it supports (1.19, 1.21 to 1.27), checked on the fixtures built by
// that release (tests/support/releases.hpp), plain, stripped and PIE:
//
//   list and info     the functions with their signatures, the Go version,
//                     runtime.g.goid's offset from DWARF and from the code agreeing
//   exact counts      count equals the programs' own counters
//   latency           entry and return paired by goroutine: no mismatch, a
//                     call timed once
//   trace             arguments and results typed from DWARF: structs (by
//                     value too), strings, slices, maps, interfaces, pointers,
//                     generics, closures, methods, inlined and leaf functions;
//                     user signatures on the stripped build
//   folded stacks     trace --folded
//   direct read       read of package variables from memory, the target not stopped
//   the Delve path    read, sample, break and set through the Delve whose
//                     window covers the release, chosen by goscope; Go 1.21,
//                     which no Debian Delve reads, refused with the hint
//
// Each contract is one TEST_CASE per part and release ("release go1.24:
// exact counts"), in the doctest suite `release`. A later part of the
// contract extends the tables here (kReads: which reads are direct on which
// release).
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/json_lines.hpp"
#include "support/releases.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"
#include "support/zoo_status.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }
std::string pidArg(pid_t pid) { return " -p " + std::to_string(pid) + " "; }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Where runtime.g.goid is (docs/go-runtime.md, "Stripped binaries"): 160 in
// Go 1.23 and 1.24, 152 in every other release of the matrix.
uint64_t goidOffsetOf(int minor) { return minor == 23 || minor == 24 ? 160 : 152; }

// zoo running on its own, its status lines read (rounds per second).
struct RunningZoo {
  std::string binary;
  Child child;
  explicit RunningZoo(const std::string& variant) : binary(fixture("zoo", variant)), child({binary}, true) {
    std::string ready;
    REQUIRE(child.readLine(ready, 10000));
    REQUIRE(ready == "ready");
  }
  pid_t pid() const { return child.pid(); }
  int64_t nextRounds(int timeoutMs = 10000) {
    std::string line;
    if (!child.readLine(line, timeoutMs) || line.rfind("zoo: ok rounds=", 0) != 0) return -1;
    return std::stoll(line.substr(15));
  }
  // Alive, no tracer left, its code equal to the file, still counting rounds
  // and passing its own checks ("zoo: ok").
  void checkUnharmed() {
    REQUIRE(alive(pid()));
    CHECK_MESSAGE(waitUntraced(pid(), 20s), "a dlv is still attached to zoo");
    auto elf = ElfFile::open(binary);
    REQUIRE(elf.has_value());
    // (textDifference reads the code at its link-time addresses: not a PIE's.)
    if (!(*elf)->isPie()) CHECK(textDifference(pid(), **elf) == 0);
    std::string l;
    while (child.readLine(l, 5)) {
    }
    int64_t a = nextRounds(), b = nextRounds();
    CHECK(a >= 0);
    CHECK(b > a);
  }
};

// ---- list and info ------------------------------------------------------------

void listAndInfo(const std::string& rel) {
  if (!releaseReady(rel)) return;
  const int minor = releaseMinor(rel);
  std::optional<uint64_t> dwarfGoid;
  for (const auto& v : kReleaseVariants) {
    CAPTURE(v);
    const std::string bin = fixture("zoo", releaseVariant(rel, v));
    auto r = runCli("info --json -b " + bin);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto o = boost::json::parse(r.out).as_object();
    CHECK(std::string(o["go_version"].as_string()).starts_with(rel + "."));
    CHECK(o["pie"].as_bool() == (v == "pie"));
    CHECK(o["dwarf"].as_bool() == (v != "stripped"));
    CHECK(o["pclntab_format"].as_string() == (minor >= 20 ? "1.20" : "1.18"));
    REQUIRE(o["goid_offset"].is_number());
    const uint64_t goid = o["goid_offset"].to_number<uint64_t>();
    CHECK(goid == goidOffsetOf(minor));
    CHECK_FALSE(o["goid_offset_assumed"].as_bool());
    const std::string how(o["goid_offset_source"].as_string());
    CAPTURE(how);
    if (v == "stripped") {
      // From the code alone, equal to what DWARF says on the plain build.
      CHECK(how.starts_with("runtime.newproc1's store at 0x"));
      REQUIRE(dwarfGoid);
      CHECK(goid == *dwarfGoid);
    } else {
      // DWARF, and the code agreeing with it (a disagreement says "says").
      CHECK(how.starts_with("DWARF, and runtime.newproc1's store at 0x"));
      CHECK_FALSE(has(how, "says"));
      dwarfGoid = goid;
    }
    // The Delve goscope would run for it (docs/delve.md, "Which Delve").
    REQUIRE(o.contains("delve"));
    auto d = o["delve"].as_object();
    CAPTURE(d);
    if (v == "stripped") {
      CHECK(d["path"].is_null());
      CHECK(has(std::string(d["why"].as_string()), "no DWARF"));
    }
  }

  // list: the functions of every kind, with their signatures from DWARF.
  auto r = runCli("list --json -b " + fixture("zoo", releaseVariant(rel, "default")) + " 'main.*'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  std::map<std::string, boost::json::object> fns;
  for (auto& o : functionObjects(r.out)) fns[std::string(o["func"].as_string())] = o;
  const std::map<std::string, std::string> signatures = {
      {"main.add", "main.add(x int, y int) int"},
      {"main.divmod", "main.divmod(a int, b int) (q int, r int)"},
      {"main.checkRecord", "main.checkRecord(r main.Record) int64"},
      {"main.(*Server).Handle", "main.(*Server).Handle(s *main.Server, req main.Request) (main.Response, error)"},
      {"main.Server.Addr", "main.Server.Addr(s main.Server) string"},
      {"main.shapeArea", "main.shapeArea(s main.Shape) float64"},
      {"main.bump", "main.bump(p *int64, by int64)"},
      {"main.makeAdder.func1", "main.makeAdder.func1(x int) int"},
  };
  for (const auto& [fn, sig] : signatures) {
    CAPTURE(fn);
    REQUIRE(fns.count(fn));
    CHECK(std::string(fns[fn]["signature"].as_string()) == sig);
    CHECK(fns[fn]["probe"].is_string());
  }
  // The two generic instantiations (both "main.Map[...]" in Go 1.19's
  // pclntab, by their shape names from 1.21 on).
  size_t generics = 0;
  for (auto& o : functionObjects(r.out)) generics += std::string(o["func"].as_string()).starts_with("main.Map[");
  CHECK(generics == 2);
  if (dwarfGoid) supportFact("goroutine id at offset " + std::to_string(*dwarfGoid) + ", DWARF and the code agreeing");
}

// ---- exact counts -------------------------------------------------------------

// The integers after "NAME: " or "NAME=" in a fixture's own output.
std::map<std::string, int64_t> ownCounts(const std::string& text, const std::vector<std::string>& names) {
  std::map<std::string, int64_t> out;
  for (const auto& line : splitLines(text))
    for (const auto& n : names)
      for (const std::string sep : {": ", "="}) {
        auto at = line.rfind(n + sep);
        if (at != std::string::npos && (at == 0 || line[at - 1] == ' ')) out[n] = std::stoll(line.substr(at + n.size() + sep.size()));
      }
  return out;
}

void exactCounts(const std::string& rel) {
  if (!releaseReady(rel)) return;
  for (const auto& v : kReleaseVariants) {
    CAPTURE(v);
    const std::string var = releaseVariant(rel, v);
    // zoo: functions of every kind against its own counters (rounds x the per-round calls).
    const std::vector<std::string> zooFns = {"main.add", "main.checkRecord", "main.(*Server).Handle", "main.Server.Addr",
                                             "main.Rect.Area", "main.(*Circle).Area", "main.makeAdder.func1",
                                             "main.deepRecurse", "main.mayPanic", "main.mayPanic.func1",
                                             "main.processJob", "main.runRound.func2"};
    std::string patterns;
    for (const auto& f : zooFns) patterns += " " + quoted(f);
    auto r = runCli("count --json -c '" + fixture("zoo", var) + " --rounds 3 --json'" + patterns + " 'main.Map*'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto zoo = lastZooStatus(r.err);
    REQUIRE(zoo.contains("ok"));
    CHECK(zoo["ok"].as_bool());
    auto& calls = zoo["calls"].as_object();
    auto counted = finalCounts(r.out);
    for (const auto& f : zooFns) {
      CAPTURE(f);
      CHECK(counted[f] == calls[f].as_int64());
    }
    // Both instantiations may be named "main.Map[...]" (pclntab's name: Go
    // 1.19, stripped builds): one row each.
    int64_t maps = 0;
    for (auto& o : functionObjects(r.out))
      if (o.contains("final") && std::string(o["func"].as_string()).starts_with("main.Map[")) maps += o["count"].as_int64();
    CHECK(maps == calls["main.Map[go.shape.int_0,go.shape.string_1]"].as_int64() +
                       calls["main.Map[go.shape.string_0,go.shape.int_1]"].as_int64());

    // Inlined calls, counted at their bodies, against the program's own counters.
    auto in = runCli("count --json -c '" + fixture("inlined", var) + " --repeat 3' main.square main.isEven main.addOne main.sumTo");
    REQUIRE_MESSAGE(in.exitCode == 0, in.err);
    auto own = ownCounts(in.err, {"square", "isEven", "addOne", "sumTo"});
    auto c = finalCounts(in.out);
    REQUIRE(own.size() == 4);
    for (const auto& [n, want] : own) {
      CAPTURE(n);
      CHECK(c["main." + n] == want);
    }

    // Leaf functions (no stack check), some counted at their call sites.
    auto leaf = runCli("count --json -c '" + fixture("leafcalls", var) + " --rounds 2' main.leaf main.taken main.wide main.bump");
    REQUIRE_MESSAGE(leaf.exitCode == 0, leaf.err);
    auto lown = ownCounts(leaf.err, {"leaf", "taken", "wide", "bump"});
    auto lc = finalCounts(leaf.out);
    REQUIRE(lown.size() == 4);
    for (const auto& [n, want] : lown) {
      CAPTURE(n);
      CHECK(lc["main." + n] == want);
    }

    // A recursive function taking a map: fibonacciRecursive(20) makes 21891
    // calls, fibonacciCache(30) 59 (on the plain build: zoo's deepRecurse
    // covers recursion on the others).
    if (v != "default") continue;
    auto fib = runCli("count --json -c '" + fixture("fibonacci", var) + " --repeat 2' 'main.fib*'");
    REQUIRE_MESSAGE(fib.exitCode == 0, fib.err);
    auto fc = finalCounts(fib.out);
    CHECK(fc["main.fibonacciRecursive"] == 2 * 21891);
    CHECK(fc["main.fibonacciCache"] == 2 * 59);
    CHECK(fc["main.fibonacciLoop"] == 2);
  }
}

// ---- latency ------------------------------------------------------------------

void pairedLatency(const std::string& rel) {
  if (!releaseReady(rel)) return;
  for (const auto& v : kReleaseVariants) {
    CAPTURE(v);
    auto r = runCli("latency --json -c '" + fixture("zoo", releaseVariant(rel, v)) +
                    " --rounds 2 --json' main.sleepWork main.deepRecurse main.mayPanic");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto zoo = lastZooStatus(r.err);
    REQUIRE(zoo.contains("ok"));
    CHECK(zoo["ok"].as_bool());
    auto& calls = zoo["calls"].as_object();
    std::map<std::string, boost::json::object> lat;
    for (auto& o : functionObjects(r.out)) lat[std::string(o["func"].as_string())] = o;
    for (const char* f : {"main.sleepWork", "main.deepRecurse", "main.mayPanic"}) {
      CAPTURE(f);
      REQUIRE(lat.count(f));
      // Paired by goroutine: sleepWork's goroutines park and move between threads.
      CHECK(lat[f]["mismatches"].as_int64() == 0);
      // Each call timed once (deepRecurse's stack growth does not add one).
      CHECK(lat[f]["count"].as_int64() == calls[f].as_int64());
    }
    // sleepWork sleeps 1 to 5 ms: nothing shorter.
    CHECK(lat["main.sleepWork"]["min_ns"].as_int64() >= 1000000);
  }
}

// ---- trace --------------------------------------------------------------------

// trace's text lines of one function, without the time, pid and duration,
// addresses as 0x…: "goid=1 main.greet(name=\"gopher\") = \"hello, gopher\"".
// Trace lines by function, the line's prefix (goid, call) with the run's
// timestamps, durations and addresses (hex of `minHexDigits` digits and
// more) masked.
std::map<std::string, std::vector<std::string>> traceLines(const std::string& text, int minHexDigits = 1) {
  static const std::regex line(R"(^\d\d:\d\d:\d\d\.\d+ pid=\d+ (goid=\d+ (main\.\(\*[A-Za-z]+\)\.[A-Za-z]+|[^(]+)\(.*?)(  \[[^\]]*\])*$)");
  const std::regex addr("0x[0-9a-f]{" + std::to_string(minHexDigits) + ",}");
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& l : splitLines(text)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    out[m[2]].push_back(std::regex_replace(std::string(m[1]), addr, "0x…"));
  }
  return out;
}

using Lines = std::vector<std::string>;

void typedTrace(const std::string& rel) {
  if (!releaseReady(rel)) return;
  for (const std::string v : {"default", "pie"}) {
    CAPTURE(v);
    const std::string var = releaseVariant(rel, v);
    auto r = runCli("trace -c '" + fixture("zoo", var) +
                    " --rounds 1' 'main.(*Server).Handle' main.Server.Addr main.greet main.sum main.reverseStrings "
                    "main.checkRecord main.ship main.shapeArea main.bump main.parsePositive main.divmod main.makeAdder.func1 "
                    "main.Rect.Area 'main.Map*' main.quadruple");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(has(r.out + r.err, "zoo: ok"));
    auto got = traceLines(r.out);
    // Structs by value, in and out; a pointer receiver; an error interface.
    CHECK(got["main.(*Server).Handle"] ==
          Lines{"goid=1 main.(*Server).Handle(s=&main.Server{Name: \"api\", Port: 8080}, req=main.Request{Path: \"/users\", ID: 7}) = "
                "main.Response{Status: 200, Body: \"api:/users#7\"}, nil",
                "goid=1 main.(*Server).Handle(s=&main.Server{Name: \"api\", Port: 8080}, req=main.Request{Path: \"/missing\", ID: 8}) = "
                "main.Response{Status: 404, Body: \"\"}, error(*errors.errorString)0x… \"not found\""});
    // A value receiver.
    CHECK(got["main.Server.Addr"] == Lines{"goid=1 main.Server.Addr(s=main.Server{Name: \"api\", Port: 8080}) = \"api:8080\""});
    CHECK(got["main.ship"] == Lines{"goid=1 main.ship(o=main.Order{ID: 42, Note: \"fragile\"}, n=3) = 133"});
    CHECK(got["main.greet"] == Lines{"goid=1 main.greet(name=\"gopher\") = \"hello, gopher\""});
    CHECK(got["main.sum"] == Lines{"goid=1 main.sum(xs=[]int{len=10 cap=10: 1, 2, 3, 4, …}) = 55"});
    CHECK(got["main.reverseStrings"] ==
          Lines{"goid=1 main.reverseStrings(xs=[]string{len=3 cap=3: \"a\", \"b\", \"c\"}) = []string{len=3 cap=3: \"c\", \"b\", \"a\"}"});
    CHECK(got["main.checkRecord"] == Lines{"goid=1 main.checkRecord(r=main.Record{X: 6, Y: 7, Name: \"zoo\"}) = 45"});
    CHECK(got["main.shapeArea"] ==
          Lines{"goid=1 main.shapeArea(s=main.Shape(main.Rect)0x…) = <unavailable: float in X0>",
                "goid=1 main.shapeArea(s=main.Shape(*main.Circle)0x…) = <unavailable: float in X0>"});
    CHECK(got["main.bump"] == Lines{"goid=1 main.bump(p=&0, by=5)", "goid=1 main.bump(p=&5, by=5)"});
    CHECK(got["main.parsePositive"] ==
          Lines{"goid=1 main.parsePositive(s=\"42\") = 42, nil",
                "goid=1 main.parsePositive(s=\"-7\") = 0, error(*errors.errorString)0x… \"not positive: -7\"",
                "goid=1 main.parsePositive(s=\"x\") = 0, error(*strconv.NumError)0x…"});
    CHECK(got["main.divmod"] == Lines{"goid=1 main.divmod(a=17, b=5) = q=3, r=2"});
    // A closure (its captured k is not an argument).
    CHECK(got["main.makeAdder.func1"] == Lines{"goid=1 main.makeAdder.func1(x=1) = 101", "goid=1 main.makeAdder.func1(x=2) = 102"});
    CHECK(got["main.Rect.Area"] == Lines{"goid=1 main.Rect.Area(r=main.Rect{W: <unavailable: float in X0>, H: <unavailable: float in X1>}) = "
                "<unavailable: float in X0>"});
    CHECK(got["main.quadruple"] == Lines{"goid=1 main.quadruple(x=7) = 28"});
    // Generics: each instantiation with its own argument types.
    Lines generics;
    for (const auto& [name, ls] : got)
      if (name.starts_with("main.Map[")) generics.insert(generics.end(), ls.begin(), ls.end());
    std::sort(generics.begin(), generics.end());
    CHECK(generics.size() == 2);
    for (const auto& l : generics) CHECK(has(l, "xs=[]"));

    // A map argument (printed as its address: the BPF path does not read
    // what a map points to), a recursive function: fibonacciCache(30) makes
    // 59 calls, the outermost returns last.
    auto fib = runCli("trace -c '" + fixture("fibonacci", var) + "' main.fibonacciCache");
    REQUIRE_MESSAGE(fib.exitCode == 0, fib.err);
    auto fl = traceLines(fib.out)["main.fibonacciCache"];
    REQUIRE(fl.size() == 59);
    for (const auto& l : fl) CHECK(std::regex_match(l, std::regex(R"(goid=1 main\.fibonacciCache\(n=\d+, cache=0x…\) = \d+)")));
    CHECK(fl.back() == "goid=1 main.fibonacciCache(n=30, cache=0x…) = 832040");

    // A leaf function with an argument on the stack, traced at its call sites.
    auto leaf = runCli("trace -c '" + fixture("leafcalls", var) + " --rounds 1' main.wide");
    REQUIRE_MESSAGE(leaf.exitCode == 0, leaf.err);
    CHECK(traceLines(leaf.out)["main.wide"] == Lines{"goid=1 main.wide(a=[3]int64{0, 7, 11}, k=5) = sum=23, prod=35",
                                                      "goid=1 main.wide(a=[3]int64{-2, 3, 4}, k=9) = sum=14, prod=27"});
    // An inlined function: delivered at its body, its arguments never in registers.
    auto inl = runCli("trace -c '" + fixture("inlined", var) + "' main.sumTo");
    REQUIRE_MESSAGE(inl.exitCode == 0, inl.err);
    auto il = traceLines(inl.out)["main.sumTo"];
    REQUIRE_FALSE(il.empty());
    for (const auto& l : il) CHECK(has(l, "main.sumTo(unavailable: inlined)"));
  }

  // The stripped build: user signatures, type names from the runtime's records.
  auto s = runCli("trace -c '" + fixture("zoo", releaseVariant(rel, "stripped")) +
                  " --rounds 1' 'main.greet(name string) string' 'main.sum(xs []int) int' "
                  "'main.parsePositive(s string) (int, error)' 'main.bump(p *int64, by int64)'");
  REQUIRE_MESSAGE(s.exitCode == 0, s.err);
  auto sg = traceLines(s.out);
  CHECK(sg["main.greet"] == Lines{"goid=1 main.greet(name=\"gopher\") = \"hello, gopher\""});
  CHECK(sg["main.sum"] == Lines{"goid=1 main.sum(xs=[]int{len=10 cap=10: 1, 2, 3, 4, …}) = 55"});
  CHECK(sg["main.parsePositive"] ==
        Lines{"goid=1 main.parsePositive(s=\"42\") = 42, nil",
              "goid=1 main.parsePositive(s=\"-7\") = 0, error(*errors.errorString)0x… \"not positive: -7\"",
              "goid=1 main.parsePositive(s=\"x\") = 0, error(*strconv.NumError)0x…"});
  CHECK(sg["main.bump"] == Lines{"goid=1 main.bump(p=&0, by=5)", "goid=1 main.bump(p=&5, by=5)"});
}

// ---- folded stacks ------------------------------------------------------------

void foldedStacks(const std::string& rel) {
  if (!releaseReady(rel)) return;
  for (const auto& v : kReleaseVariants) {
    CAPTURE(v);
    auto r = runCli("trace --folded -c '" + fixture("zoo", releaseVariant(rel, v)) + " --rounds 2 --json' main.add main.sleepWork");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto zoo = lastZooStatus(r.out + "\n" + r.err);
    REQUIRE(zoo.contains("ok"));
    int64_t add = 0, sleep = 0;
    for (const auto& l : splitLines(r.out)) {
      CAPTURE(l);
      if (l.empty() || l[0] == '{' || l == "ready") continue;  // zoo's own lines
      auto sp = l.rfind(' ');
      REQUIRE(sp != std::string::npos);
      const std::string stack = l.substr(0, sp);
      const int64_t n = std::stoll(l.substr(sp + 1));
      if (stack.ends_with(";main.runRound;main.add")) {
        CHECK(has(stack, "runtime.main;main.main;main.runRound;main.add"));
        add += n;
      } else if (stack.ends_with(";main.processJob;main.sleepWork")) {
        // On the workers' goroutines: started by runtime.goexit, through main.worker.
        CHECK(has(stack, "main.worker;main.processJob;main.sleepWork"));
        sleep += n;
      } else {
        FAIL_CHECK("a stack that ends elsewhere");
      }
    }
    CHECK(add == zoo["calls"].as_object()["main.add"].as_int64());
    CHECK(sleep == zoo["calls"].as_object()["main.sleepWork"].as_int64());
  }
}

// ---- direct read --------------------------------------------------------------

// A package variable of zoo (or an expression) and what `read` prints for it,
// on every path. `direct`: read from memory, the target not stopped, on that
// release (package variables of every kind, maps too: test_read_oracle.cpp
// compares every kind with Delve; fields through structs and len/cap too;
// other expressions go to Delve). The Delve path reads them all.
struct ReadCase {
  std::string expr;
  std::string text;  // "main.items = ..." as read prints it
  bool (*direct)(int minor);
};
bool always(int) { return true; }


const std::vector<ReadCase> kReads = {
    {"main.items", "main.items = []string{len=3 cap=3: \"alpha\", \"beta\", \"gamma\"} ([]string)", always},
    {"main.primary", "main.primary = &main.Server{Name: \"zoo\", Port: 8080} (*main.Server)", always},
    {"main.cfg.Name", "main.cfg.Name = \"zoo\" (string)", always},
    {"main.cfg.Ratio", "main.cfg.Ratio = 0.75 (float64)", always},
    {"len(main.items)", "len(main.items) = 3 (int)", always},
    {"main.labels", "main.labels = map[string]int{len=3: \"red\": 1, \"green\": 2, \"blue\": 3} (map[string]int)", always},
};

void directRead(const std::string& rel) {
  if (!releaseReady(rel)) return;
  const int minor = releaseMinor(rel);
  size_t read = 0;
  for (const std::string v : {"default", "pie"}) {
    CAPTURE(v);
    RunningZoo z(releaseVariant(rel, v));
    for (const auto& c : kReads) {
      if (!c.direct(minor)) continue;
      read += v == "default";
      CAPTURE(c.expr);
      auto r = runCli("read --explain" + pidArg(z.pid()) + quoted(c.expr));
      INFO("stderr: " << r.err);
      REQUIRE(r.exitCode == 0);
      CHECK(has(r.err, "plan: direct-read"));
      CHECK(has(r.err, "was not stopped: read directly from its memory"));
      CHECK(r.out == c.text + "\n");
    }
    z.checkUnharmed();
  }
  supportFact(std::to_string(read) + " of " + std::to_string(kReads.size()) + " expressions (variables, fields, len), never stopped");
}

// ---- the Delve path -----------------------------------------------------------

void delvePath(const std::string& rel) {
  if (!releaseReady(rel)) return;
  const int minor = releaseMinor(rel);
  RunningZoo z(releaseVariant(rel, "default"));
  const std::string p = pidArg(z.pid());
  const std::string debian = debianDelveFor(minor);
  if (debian.empty()) {
    // No Delve Debian has reads it: refused before anything is started,
    // naming the Delves that would and the command that gets one.
    for (const std::string& cmd : {"read --strategy delve" + p + "main.cfg.Name", "break --strategy delve -n 1" + p + "main.mayPanic",
                                  "read" + p + "'main.items[1]'"}) {
      CAPTURE(cmd);
      auto r = runCli(cmd);
      INFO("stderr: " << r.err);
      CHECK(r.exitCode == 4);
      CHECK(r.out.empty());
      CHECK(has(r.err, "was built by go1." + std::to_string(minor)));
      CHECK(has(r.err, "Delve 1." + std::to_string(minor) + " to 1." + std::to_string(minor + 2) + " read Go 1." + std::to_string(minor)));
      CHECK(has(r.err, "go install github.com/go-delve/delve/cmd/dlv@v1." + std::to_string(minor + 2) + ".0"));
      CHECK(splitLines(r.err).size() == 1);
    }
    auto info = runCli("info --json" + p);
    REQUIRE(info.exitCode == 0);
    auto d = boost::json::parse(info.out).as_object()["delve"].as_object();
    CHECK(d["path"].is_null());
    CHECK_FALSE(d["covers"].as_bool());
    CHECK(has(std::string(d["hint"].as_string()), "go install github.com/go-delve/delve/cmd/dlv@"));
    z.checkUnharmed();
    supportFact("no Debian Delve reads it: refused, naming Delve 1." + std::to_string(minor) + "-1." +
                std::to_string(minor + 2));
    return;
  }
  auto dlv = delveFor(rel);
  if (!dlv) return;

  // goscope chooses it by itself, and says which and why.
  auto info = runCli("info --json" + p);
  REQUIRE_MESSAGE(info.exitCode == 0, info.err);
  auto d = boost::json::parse(info.out).as_object()["delve"].as_object();
  CAPTURE(d);
  CHECK(d["covers"].as_bool());
  REQUIRE(d["path"].is_string());
  CHECK(std::filesystem::equivalent(std::string(d["path"].as_string()), *dlv));
  CHECK(std::string(d["version"].as_string()).starts_with(debian + "."));

  // read: every value of the table, as Delve loads them.
  std::string exprs, want;
  for (const auto& c : kReads) exprs += " " + quoted(c.expr), want += c.text + "\n";
  auto r = runCli("read --explain --strategy delve" + p + exprs);
  INFO("read stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  CHECK(r.out == want);
  CHECK(has(r.err, "plan: delve"));
  CHECK(has(r.err, "delve: Delve " + debian + "."));
  CHECK(has(r.err, "which covers go1." + std::to_string(minor)));
  CHECK(has(r.err, "was stopped"));

  // sample: a breakpoint per interval, the value at each hit.
  auto s = runCli("sample --json" + p + "--at main.mayPanic main.cfg.Name -i 0.5 -d 1.2");
  INFO("sample stderr: " << s.err);
  REQUIRE(s.exitCode == 0);
  auto recs = callObjects(s.out);
  CHECK(recs.size() >= 2);
  for (const auto& o : recs) {
    CHECK(o.at("miss") == false);
    CHECK(o.at("function") == "main.mayPanic");
    CHECK(o.at("values").at("main.cfg.Name") == "zoo");
  }

  // break: arguments and a condition, evaluated by Delve.
  auto b = runCli("break --strategy delve --json" + p + "main.mayPanic --args --stack 2 --cond 'i == 7' -n 2");
  INFO("break stderr: " << b.err);
  REQUIRE(b.exitCode == 0);
  auto hits = callObjects(b.out);
  REQUIRE(hits.size() == 2);
  for (const auto& h : hits) {
    CHECK(h.at("args").at("i") == 7);
    CHECK(h.at("function") == "main.mayPanic");
    const auto& stack = h.at("stack").as_array();
    REQUIRE(stack.size() == 2);
    CHECK(stack[1].at("function") == "main.runRound");
  }

  // set: a field nothing in zoo reads, seen by the next (direct) read.
  auto w = runCli("set" + p + "main.cfg.Workers=9 --allow-write");
  INFO("set stderr: " << w.err);
  REQUIRE(w.exitCode == 0);
  CHECK(w.out == "main.cfg.Workers = 8 -> 9 (int)\n");
  auto after = runCli("read" + p + "main.cfg.Workers");
  CHECK(after.out == "main.cfg.Workers = 9 (int)\n");
  z.checkUnharmed();
  supportFact("Delve " + std::string(d["version"].as_string()) + ": read, sample, break, set");
}

}  // namespace

TEST_SUITE_BEGIN("release");

// Which Delve (docs/delve.md, "Which Delve"): the one the user names
// (--dlv, GOSCOPE_DLV) whatever its window, else the one found that covers
// the target; none: a refusal that names the Delve that would.
TEST_CASE("release: --dlv and GOSCOPE_DLV name the Delve, otherwise the one whose window covers the target") {
  if (!releaseReady("go1.24")) return;
  auto d24 = delveFor("go1.24");
  auto d27 = delveFor("go1.27");
  if (!d24 || !d27) return;
  RunningZoo z(releaseVariant("go1.24", "default"));
  const std::string p = pidArg(z.pid());

  // Named by --dlv: Debian 12's, which does not read Go 1.24: refused before
  // it attaches, with the Delve that would and how to get it.
  auto old = runCli("read --strategy delve --dlv /usr/bin/dlv" + p + "main.cfg.Name");
  INFO("stderr: " << old.err);
  CHECK(old.exitCode == 4);
  CHECK(has(old.err, "outside what the installed Delve supports (Delve 1.20.2 reads Go 1.18 to 1.20)"));
  CHECK(has(old.err, "scripts/toolchains.sh dlv1.24"));

  // Named by GOSCOPE_DLV: info says so, and whether it covers the target.
  auto named = run("GOSCOPE_DLV=" + *d27 + " " + cliPath() + " info --json" + p);
  REQUIRE_MESSAGE(named.exitCode == 0, named.err);
  auto d = boost::json::parse(named.out).as_object()["delve"].as_object();
  CHECK(d["source"] == "GOSCOPE_DLV");
  CHECK(std::string(d["path"].as_string()) == *d27);
  CHECK_FALSE(d["covers"].as_bool());
  CHECK(has(std::string(d["why"].as_string()), "which does not cover go1.24"));

  // --dlv naming the one that covers it: used, and --explain says why.
  auto right = runCli("read --explain --strategy delve --dlv " + *d24 + p + "main.cfg.Name");
  INFO("stderr: " << right.err);
  REQUIRE(right.exitCode == 0);
  CHECK(right.out == "main.cfg.Name = \"zoo\" (string)\n");
  CHECK(has(right.err, "delve: Delve 1.24.0 (" + *d24 + ", --dlv) reads Go 1.22 to 1.24, which covers go1.24"));

  // No dlv anywhere: exit 7, where goscope looked, and the one that would read it.
  auto none = run("PATH=/nonexistent GOSCOPE_TOOLCHAINS=/nonexistent " + cliPath() + " read --strategy delve" + p + "main.cfg.Name");
  INFO("stderr: " << none.err);
  CHECK(none.exitCode == 7);
  CHECK(has(none.err, "dlv (Delve) is not installed"));
  CHECK(has(none.err, "scripts/toolchains.sh dlv"));
  z.checkUnharmed();
}

// The runtime's traceback layout on the stripped build, with no signature:
// every word that typedTrace's lines show as a value (the same calls of the
// same program: --rounds 1 is deterministic), grouped as Go's traceback
// groups them; addresses masked (hex from 0x10000 up, traceLines(text, 5)).
// No results (the binary does not say how many words a function returns),
// never registers.

void tracebackLayout(const std::string& rel) {
  if (!releaseReady(rel)) return;
  auto r = runCli("trace -c '" + fixture("zoo", releaseVariant(rel, "stripped")) +
                  " --rounds 1' 'main.(*Server).Handle' main.Server.Addr main.greet main.sum main.reverseStrings "
                  "main.checkRecord main.ship main.shapeArea main.bump main.parsePositive main.divmod main.makeAdder.func1 "
                  "main.quadruple main.deepRecurse");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(has(r.out + r.err, "zoo: ok"));
  CHECK_FALSE(has(r.out, "rax="));
  auto got = traceLines(r.out, 5);
  // Called directly: no func type kept, but main.Server is described, so
  // the receiver is typed from its record and the request is words.
  CHECK(got["main.(*Server).Handle"] ==
        Lines{"goid=1 main.(*Server).Handle(recv=&main.Server{Name: \"api\", Port: 8080}, {{0x…, 0x6}, 0x7})",
              "goid=1 main.(*Server).Handle(recv=&main.Server{Name: \"api\", Port: 8080}, {{0x…, 0x8}, 0x8})"});
  // (main.Server.Addr's types are in its method table: typed below.)
  CHECK(got["main.Server.Addr"] == Lines{"goid=1 main.Server.Addr(recv=main.Server{Name: \"api\", Port: 8080}) = \"api:8080\""});
  CHECK(got["main.greet"] == Lines{"goid=1 main.greet({0x…, 0x6})"});
  CHECK(got["main.sum"] == Lines{"goid=1 main.sum({0x…, 0xa, 0xa})"});
  CHECK(got["main.reverseStrings"] == Lines{"goid=1 main.reverseStrings({0x…, 0x3, 0x3})"});
  CHECK(got["main.checkRecord"] == Lines{"goid=1 main.checkRecord({0x6, 0x7, {0x…, 0x3}})"});
  // ship(o Order, n int): a struct of an int and a string, then an int.
  CHECK(got["main.ship"] == Lines{"goid=1 main.ship({0x2a, {0x…, 0x7}}, 0x3)"});
  CHECK(got["main.shapeArea"] == Lines{"goid=1 main.shapeArea({0x…, 0x…})", "goid=1 main.shapeArea({0x…, 0x…})"});
  CHECK(got["main.bump"] == Lines{"goid=1 main.bump(0x…, 0x5)", "goid=1 main.bump(0x…, 0x5)"});
  CHECK(got["main.parsePositive"] ==
        Lines{"goid=1 main.parsePositive({0x…, 0x2})", "goid=1 main.parsePositive({0x…, 0x2})",
              "goid=1 main.parsePositive({0x…, 0x1})"});
  CHECK(got["main.divmod"] == Lines{"goid=1 main.divmod(0x11, 0x5)"});
  CHECK(got["main.makeAdder.func1"] == Lines{"goid=1 main.makeAdder.func1(0x1)", "goid=1 main.makeAdder.func1(0x2)"});
  CHECK(got["main.quadruple"] == Lines{"goid=1 main.quadruple(0x7)"});
  // deepRecurse(depth int, pad [64]byte): depth in a register, pad on the
  // stack byte by byte, cut where the runtime's layout stops (ten
  // components); the nine stack bytes come in one read.
  auto deep = got["main.deepRecurse"];
  REQUIRE_FALSE(deep.empty());
  CHECK_MESSAGE(std::regex_match(deep.back(), std::regex(R"(goid=\d+ main\.deepRecurse\(0x[0-9a-f]+, \{(0x[0-9a-f]+, ){9}\.\.\.\}\))")), deep.back());

  // A signature naming a struct the binary's runtime type records describe:
  // laid out from the record, field by field, as typedTrace's DWARF lines.
  auto st = runCli("trace -c '" + fixture("zoo", releaseVariant(rel, "stripped")) +
                   " --rounds 1' 'main.Server.Addr(s main.Server) string' 'main.Rect.Area(r main.Rect) float64'");
  REQUIRE_MESSAGE(st.exitCode == 0, st.err);
  auto typed = traceLines(st.out);
  CHECK(typed["main.Server.Addr"] == Lines{"goid=1 main.Server.Addr(s=main.Server{Name: \"api\", Port: 8080}) = \"api:8080\""});
  CHECK(typed["main.Rect.Area"] == Lines{"goid=1 main.Rect.Area(r=main.Rect{W: <unavailable: float in X0>, H: <unavailable: float in X1>}) = "
                                         "<unavailable: float in X0>"});

  // No signature, no DWARF: a method reachable through an interface has its
  // types in its receiver's method table (checked against the traceback
  // layout): receiver, arguments and results decoded, positional names.
  auto inf = runCli("trace -c '" + fixture("zoo", releaseVariant(rel, "stripped")) +
                    " --rounds 1' 'os.(*File).Write' 'errors.(*errorString).Error' main.Server.Addr 'main.(*Circle).Area' "
                    "'main.(*Truck).Ship'");
  REQUIRE_MESSAGE(inf.exitCode == 0, inf.err);
  const std::string out = std::regex_replace(inf.out, std::regex("0x[0-9a-f]{5,}"), "0x…");
  CHECK(has(out, " main.Server.Addr(recv=main.Server{Name: \"api\", Port: 8080}) = \"api:8080\"  ["));
  CHECK(has(out, " main.(*Circle).Area(recv=&main.Circle{R: 1}) = <unavailable: float in X0>  ["));
  // Called through the Shipper interface only: a string and an int in,
  // an int and an error out.
  CHECK(has(out, " main.(*Truck).Ship(recv=&main.Truck{Plate: \"GO-127\"}, p0=\"oslo\", p1=3) = 12, nil  ["));
  CHECK(has(out, " errors.(*errorString).Error(recv=&errors.errorString{s: \"not positive: -7\"}) = \"not positive: -7\"  ["));
  // "ready\n": six bytes of a []byte, and Write's (n int, err error).
  CHECK(std::regex_search(out, std::regex(R"( os\.\(\*File\)\.Write\(recv=&os\.File\{file: 0x…\}, p0=\[\]uint8\{len=6 cap=\d+: 114, 101, 97, 100, …\}\) = 6, nil  \[)")));

  // JSON: positional, groups as arrays, results null.
  auto j = runCli("trace --json -c '" + fixture("zoo", releaseVariant(rel, "stripped")) + " --rounds 1' main.checkRecord");
  REQUIRE_MESSAGE(j.exitCode == 0, j.err);
  auto calls = callObjects(j.out);
  REQUIRE(calls.size() == 1);
  const auto& args = calls[0]["args"].as_array();
  REQUIRE(args.size() == 1);
  const auto& rec = args[0].as_array();
  REQUIRE(rec.size() == 3);
  CHECK(rec[0].to_number<int64_t>() == 6);
  CHECK(rec[1].to_number<int64_t>() == 7);
  CHECK(rec[2].as_array().at(1).to_number<int64_t>() == 3);
  CHECK(calls[0]["results"].is_null());
}

// A value with what differs between two runs of two builds taken out: the
// addresses of pointed-to values and every address-sized number.
boost::json::value withoutAddresses(const boost::json::value& v) {
  if (v.is_object()) {
    boost::json::object o;
    for (const auto& [k, x] : v.as_object())
      if (k != "addr") o[k] = withoutAddresses(x);
    return o;
  }
  if (v.is_array()) {
    boost::json::array a;
    for (const auto& x : v.as_array()) a.push_back(withoutAddresses(x));
    return a;
  }
  if (v.is_string() && std::regex_match(std::string(v.as_string()), std::regex("0x[0-9a-f]{5,}"))) return "0x…";
  return v;
}

// The values of an args or results JSON, by position (named or not).
std::vector<boost::json::value> byPosition(const boost::json::value& v) {
  std::vector<boost::json::value> out;
  if (v.is_object())
    for (const auto& [k, x] : v.as_object()) out.push_back(withoutAddresses(x));
  else if (v.is_array())
    for (const auto& x : v.as_array()) out.push_back(withoutAddresses(x));
  return out;
}

// Every main.* function a stripped build types without DWARF (from its
// receiver's method table, or its receiver alone) prints, call by call, the
// values the DWARF-typed trace of the plain build prints: the arguments and
// results of a signature, the receiver of a typed receiver.
void inferredCallByCall(const std::string& rel) {
  if (!releaseReady(rel)) return;
  const std::string stripped = fixture("zoo", releaseVariant(rel, "stripped"));
  auto l = runCli("list --json -b " + stripped + " 'main.*'");
  REQUIRE_MESSAGE(l.exitCode == 0, l.err);
  std::map<std::string, std::string> from;
  std::string names;
  for (auto& o : functionObjects(l.out)) {
    if (!o["signature_from"].is_string()) continue;  // an inlined body
    const std::string f(o["func"].as_string()), src(o["signature_from"].as_string());
    // A wrapper the compiler generates has no parameters in DWARF to compare.
    if ((src == "interface" || src == "receiver") && o["file"] != "<autogenerated>") {
      from[f] = src;
      names += " " + quoted(f);
    }
  }
  CAPTURE(names);
  REQUIRE(from.count("main.(*Truck).Ship"));
  REQUIRE(from.count("main.Server.Addr"));
  REQUIRE(from.count("main.(*Server).Handle"));
  auto callsOf = [&](const std::string& variant) {
    auto r = runCli("trace --json -c '" + fixture("zoo", releaseVariant(rel, variant)) + " --rounds 1'" + names);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    std::map<std::string, std::vector<boost::json::object>> calls;
    for (auto& o : callObjects(r.out)) calls[std::string(o["func"].as_string())].push_back(o);
    for (auto& [f, v] : calls)
      std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.at("ts_ns").as_int64() < b.at("ts_ns").as_int64(); });
    return calls;
  };
  auto dwarf = callsOf("default");
  auto inferred = callsOf("stripped");
  size_t compared = 0;
  for (const auto& [f, src] : from) {
    CAPTURE(f);
    CAPTURE(src);
    REQUIRE_FALSE(dwarf[f].empty());  // zoo calls each of them every round
    REQUIRE(dwarf[f].size() == inferred[f].size());
    for (size_t i = 0; i < dwarf[f].size(); i++) {
      const auto want = byPosition(dwarf[f][i].at("args"));
      const auto got = byPosition(inferred[f][i].at("args"));
      CAPTURE(boost::json::serialize(dwarf[f][i]));
      CAPTURE(boost::json::serialize(inferred[f][i]));
      if (src == "interface") {
        CHECK(got == want);
        CHECK(byPosition(inferred[f][i].at("results")) == byPosition(dwarf[f][i].at("results")));
      } else {
        REQUIRE_FALSE(got.empty());
        REQUIRE_FALSE(want.empty());
        CHECK(got.front() == want.front());  // the receiver; the rest are words
        CHECK(inferred[f][i].at("results").is_null());
      }
      compared++;
    }
  }
  MESSAGE(rel << ": " << from.size() << " functions typed without DWARF, " << compared << " calls compared");
}

#define RELEASE_CONTRACT(R)                                                       \
  TEST_CASE("release " R ": list and info") { listAndInfo(R); }                   \
  TEST_CASE("release " R ": exact counts") { exactCounts(R); }                    \
  TEST_CASE("release " R ": goroutine-paired latency") { pairedLatency(R); }      \
  TEST_CASE("release " R ": typed trace arguments and results") { typedTrace(R); } \
  TEST_CASE("release " R ": stripped: traceback layout, struct and method signatures") { tracebackLayout(R); } \
  TEST_CASE("release " R ": stripped: inferred types print DWARF's values, call by call") { inferredCallByCall(R); } \
  TEST_CASE("release " R ": folded stacks") { foldedStacks(R); }                  \
  TEST_CASE("release " R ": direct read") { directRead(R); }                      \
  TEST_CASE("release " R ": the Delve path") { delvePath(R); }

RELEASE_CONTRACT("go1.19")
RELEASE_CONTRACT("go1.21")
RELEASE_CONTRACT("go1.22")
RELEASE_CONTRACT("go1.23")
RELEASE_CONTRACT("go1.24")
RELEASE_CONTRACT("go1.25")
RELEASE_CONTRACT("go1.26")
RELEASE_CONTRACT("go1.27")

TEST_SUITE_END();
