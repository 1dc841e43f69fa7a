// --filter (issue #17): trace and count pass exactly the calls whose
// arguments match, tested in the kernel — the others are neither counted
// (count) nor sent to user space (trace: the kernel's own count of records
// written to the ring buffer, session_cost.events_sent, is two per shown
// call, and session_cost.filtered_out is the rest). On the zoo fixture, whose
// calls are known (fixtures/go/zoo/main.go, runRound): per round main.add
// gets x = 0 0 1 3 6 10 15 21 28 36 (the running sum, y = 0..9) and then
// add(42, 13); main.parsePositive gets "42", "-7" and "x"; main.greet "gopher".
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <thread>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

constexpr int kRounds = 3;
const std::vector<int64_t> kAddX = {0, 0, 1, 3, 6, 10, 15, 21, 28, 36, 42};
const std::vector<int64_t> kAddY = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13};

std::string zooCommand(const std::string& variant = "default") {
  return "-c '" + fixture("zoo", variant) + " --rounds " + std::to_string(kRounds) + "'";
}

// count --json's final count of `func` (the zoo's own status lines share stdout).
int64_t finalCount(const std::string& out, const std::string& func) {
  for (auto& o : jsonObjects(out))
    if (o.contains("final") && o["func"] == func.c_str()) return o["count"].to_number<int64_t>();
  return -1;
}

int64_t costField(const std::string& out, const char* key) {
  auto c = sessionCost(out);
  if (!c || !c->contains(key)) return -1;
  return (*c)[key].to_number<int64_t>();
}

// How many of main.add's calls in a round satisfy `pred(x, y)`: the
// fixture's own arithmetic, not a number copied from a run.
template <class P>
int64_t addMatches(P pred) {
  int64_t n = 0;
  for (size_t i = 0; i < kAddX.size(); i++) n += pred(kAddX[i], kAddY[i]) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("filter: count counts exactly the calls whose integer arguments match, signed compares included") {
  struct Case {
    std::string filter;
    int64_t perRound;
  };
  const std::vector<Case> cases = {
      {"x > 20", addMatches([](int64_t x, int64_t) { return x > 20; })},
      {"x > 20 && y < 9", addMatches([](int64_t x, int64_t y) { return x > 20 && y < 9; })},
      {"y == 13", 1},
      // A negative constant against a signed argument: an unsigned compare would pass nothing.
      {"x >= -1 && y != 13", addMatches([](int64_t, int64_t y) { return y != 13; })},
      {"x <= 0", addMatches([](int64_t x, int64_t) { return x <= 0; })},
  };
  for (const auto& c : cases) {
    CAPTURE(c.filter);
    auto r = runCli("count --json " + zooCommand() + " main.add --filter '" + c.filter + "'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(finalCount(r.out, "main.add") == c.perRound * kRounds);
    // Every other call was dropped in the kernel, and says so.
    CHECK(costField(r.out, "filtered_out") == (11 - c.perRound) * kRounds);
    CHECK(r.err.find("calls filtered out in the kernel") != std::string::npos);
  }
  // Without a filter: every call, and no filtered_out key.
  auto all = runCli("count --json " + zooCommand() + " main.add");
  REQUIRE_MESSAGE(all.exitCode == 0, all.err);
  CHECK(finalCount(all.out, "main.add") == 11 * kRounds);
  CHECK(costField(all.out, "filtered_out") == -1);
}

// --read VAR rides on the first function's probe: that probe keeps its
// filter (it was once reconfigured as a bare count, counting every call),
// configured before the attach (plain) or after the PIE's start (pie).
TEST_CASE("filter: count --read VAR keeps the filter of the probe that reads, plain and PIE") {
  for (const std::string variant : {"default", "pie"}) {
    CAPTURE(variant);
    auto r = runCli("count --json " + zooCommand(variant) + " main.add --filter 'y == 13' --read main.callsAdd");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(finalCount(r.out, "main.add") == kRounds);
    CHECK(costField(r.out, "filtered_out") == 10 * kRounds);
    CHECK(r.out.find("{\"var\":\"main.callsAdd\",\"value\":") != std::string::npos);
  }
}

TEST_CASE("filter: count on string arguments, equality and prefix") {
  struct Case {
    std::string func, filter;
    int64_t perRound;
  };
  const std::vector<Case> cases = {
      {"main.parsePositive", R"(s == "42")", 1},
      {"main.parsePositive", R"(s =~ "-*")", 1},  // "-7"
      {"main.parsePositive", R"(s != "x")", 2},
      {"main.parsePositive", R"(s =~ "4*")", 1},  // "42", not "-7" nor "x"
      {"main.parsePositive", R"(s == "4")", 0},   // a prefix is not equality
      {"main.parsePositive", R"(s =~ "*")", 3},   // every string
      {"main.greet", R"(name == "gopher")", 1},
      {"main.greet", R"(name =~ "goph*")", 1},
      {"main.greet", R"(name =~ "gophers*")", 0},  // longer than the argument
  };
  for (const auto& c : cases) {
    CAPTURE(c.func);
    CAPTURE(c.filter);
    auto r = runCli("count --json " + zooCommand() + " " + c.func + " --filter '" + c.filter + "'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(finalCount(r.out, c.func) == c.perRound * kRounds);
    const int64_t calls = c.func == "main.greet" ? 1 : 3;
    CHECK(costField(r.out, "filtered_out") == (calls - c.perRound) * kRounds);
  }
}

// Bytes beyond ASCII match as the bytes they are (was: never, a signed
// char against the unsigned constant: `path == "/é"` counted 0 calls). The
// routes fixture's paths (fixtures/go/routes/main.go) hold "/é" and "/é/x"
// in UTF-8 and a lone Latin-1 é, "/\xe9", once a round each.
TEST_CASE("filter: a string with bytes beyond ASCII matches its bytes, in count and trace") {
  struct Case {
    std::string filter;
    int64_t perRound;
  };
  const std::vector<Case> cases = {
      {"path == \"/\xC3\xA9\"", 1},                  // "/é" in UTF-8, not "/é/x" nor the Latin-1 one
      {"path =~ \"/\xC3\xA9*\"", 2},                 // "/é", "/é/x"
      {"path != \"/\xC3\xA9\"", 6},
      {"path == \"/\xE6\x97\xA5\xE6\x9C\xAC/\xE6\x9D\xB1\xE4\xBA\xAC\"", 1},  // "/日本/東京"
      {"path == \"/\xE9\"", 1},                       // the lone byte: not "/é"
      {"path =~ \"/\xE9*\"", 1},
  };
  const int64_t rounds = 3;
  const std::string cmd = "-c '" + fixture("routes") + " --rounds " + std::to_string(rounds) + "' main.route";
  for (const auto& c : cases) {
    CAPTURE(c.filter);
    auto r = runCli("count --json " + cmd + " --filter '" + c.filter + "'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(finalCount(r.out, "main.route") == c.perRound * rounds);
    CHECK(costField(r.out, "filtered_out") == (7 - c.perRound) * rounds);
  }
  // trace: the calls shown are those, and their paths the bytes asked for.
  auto t = runCli("trace --json " + cmd + " --filter 'path =~ \"/\xC3\xA9*\"'");
  REQUIRE_MESSAGE(t.exitCode == 0, t.err);
  auto calls = callObjects(t.out);
  REQUIRE(static_cast<int64_t>(calls.size()) == 2 * rounds);
  for (auto& o : calls) {
    const std::string path(o["args"].as_object().at("path").as_string());
    CHECK((path == "/\xC3\xA9" || path == "/\xC3\xA9/x"));
  }
}

TEST_CASE("filter: trace shows only matching calls and the kernel sends nothing of the others") {
  auto r = runCli("trace --json " + zooCommand() + " main.add --filter 'x > 20'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  auto calls = callObjects(r.out);
  const int64_t perRound = addMatches([](int64_t x, int64_t) { return x > 20; });
  REQUIRE(static_cast<int64_t>(calls.size()) == perRound * kRounds);
  std::map<int64_t, int> seen;
  for (auto& o : calls) {
    const int64_t x = o["args"].as_object().at("x").as_int64();
    const int64_t y = o["args"].as_object().at("y").as_int64();
    CHECK(x > 20);
    seen[x]++;
    CHECK(o["results"].as_array().at(0).as_int64() == x + y);  // the RET came too
  }
  for (int64_t x : {21, 28, 36, 42}) CHECK(seen[x] == kRounds);
  // The proof that the rest never crossed: an entry and a return record per
  // shown call, nothing more, and every other call counted as filtered out.
  CHECK(costField(r.out, "events_sent") == 2 * perRound * kRounds);
  CHECK(costField(r.out, "filtered_out") == (11 - perRound) * kRounds);

  // A string prefix: only "-7", with its results (the error) at the return.
  auto p = runCli("trace --json " + zooCommand() + " main.parsePositive --filter 's =~ \"-*\"'");
  REQUIRE_MESSAGE(p.exitCode == 0, p.err);
  auto pc = callObjects(p.out);
  REQUIRE(static_cast<int64_t>(pc.size()) == kRounds);
  for (auto& o : pc) CHECK(o["args"].as_object().at("s") == "-7");
  CHECK(costField(p.out, "events_sent") == 2 * kRounds);
  CHECK(costField(p.out, "filtered_out") == 2 * kRounds);

  // --folded counts stacks in the kernel: only the matching calls' stacks.
  auto f = runCli("trace --folded --json " + zooCommand() + " main.add --filter 'x > 20'");
  REQUIRE_MESSAGE(f.exitCode == 0, f.err);
  int64_t stacked = 0;
  for (auto& o : jsonObjects(f.out))
    if (o.contains("stack")) stacked += o["count"].to_number<int64_t>();
  CHECK(stacked == perRound * kRounds);
}

TEST_CASE("filter: on a stripped binary the names come from the user's signature") {
  auto r = runCli("trace --json " + zooCommand("stripped") + " 'main.add(x int, y int) int' --filter 'y >= 8'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  auto calls = callObjects(r.out);
  REQUIRE(calls.size() == 3 * kRounds);  // y = 8, 9, 13
  for (auto& o : calls) CHECK(o["args"].as_object().at("y").as_int64() >= 8);
  // Without a signature a stripped binary's arguments have no names.
  auto n = runCli("count " + zooCommand("stripped") + " main.add --filter 'y >= 8'");
  CHECK(n.exitCode == 2);
  CHECK(n.err.find("filter: main.add's arguments have no names here (no DWARF, no signature)") != std::string::npos);
}

TEST_CASE("filter: one-line errors for unknown names, type mismatches and unsupported operators") {
  Child zoo({fixture("zoo"), "--sleep-ms", "10"});
  std::this_thread::sleep_for(300ms);
  const std::string p = " -p " + std::to_string(zoo.pid()) + " ";
  struct Row {
    std::string args, needle;
  };
  const std::vector<Row> rows = {
      {"count" + p + "main.add --filter 'n > 40'", "filter: main.add has no argument `n` (its arguments: x int, y int)"},
      {"trace" + p + "main.add --filter 'x == \"api\"'", "filter: `x` (int) is an integer: compare it with a number, not \"api\""},
      {"count" + p + "main.greet --filter 'name > 3'", "filter: `name` (string) is a string: compare it with a \"quoted string\""},
      {"count" + p + "main.greet --filter 'name < \"b\"'", "filter: `name` (string) is a string: its operators are == != and =~"},
      {"trace" + p + "main.add --filter 'x ~ 3'", "filter: unsupported operator `~` after `x`"},
      {"count" + p + "main.add --filter 'x > 1 || y > 2'", "filter: `||` is not supported (only `&&`)"},
      {"count" + p + "main.greet --filter 'name =~ \"go\"'", "filter: `=~ \"go\"`: a prefix pattern ends in its only `*`"},
      {"trace --strategy delve" + p + "main.greet --filter 'name =~ \"go*\"'",
       "trace: --strategy delve cannot: a prefix filter (=~) has no Delve condition"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.args);
    auto r = runCli(row.args);
    INFO(r.err);
    CHECK(r.exitCode == 2);
    CHECK(r.out.empty());
    auto lines = splitLines(r.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("goscope: " + row.needle) == 0);
  }
  CHECK(zoo.alive());
  CHECK(waitUntraced(zoo.pid(), 10s));
}

TEST_CASE("filter: on the Delve path the filter is the breakpoints' condition") {
  Child zoo({fixture("zoo"), "--sleep-ms", "10"});
  std::this_thread::sleep_for(500ms);
  auto r = runCli("trace -n 2 --strategy delve --json -p " + std::to_string(zoo.pid()) +
                  " main.parsePositive --filter 's == \"-7\"'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find("when s == \"-7\"") != std::string::npos);
  auto calls = callObjects(r.out);
  REQUIRE(calls.size() == 2);
  for (auto& o : calls) CHECK(o["args"].as_object().at("s") == "-7");  // "42" and "x" came between them
  CHECK(waitUntraced(zoo.pid(), 10s));
  CHECK(zoo.alive());
}

// An inlined body has no arguments in registers (docs/go-runtime.md,
// "Inlined calls"): with a filter its calls cannot be tested, so they are
// left out and the attach line says so, for count and trace alike; the
// function's own entry is filtered as usual.
TEST_CASE("filter: inlined bodies are left out, and said so, since they have no arguments to test") {
  for (const std::string sub : {"count", "trace"}) {
    CAPTURE(sub);
    auto r = runCli(sub + " --json -c " + fixture("inlined") + " main.addOne --filter 'x > -1000'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(r.err.find("inlined bodies left out (--filter tests arguments, which a body inlined into another function "
                     "does not have in registers)") != std::string::npos);
    auto plain = runCli(sub + " --json -c " + fixture("inlined") + " main.addOne");
    REQUIRE_MESSAGE(plain.exitCode == 0, plain.err);
    if (sub == "count") CHECK(finalCounts(r.out)["main.addOne"] < finalCounts(plain.out)["main.addOne"]);
    else CHECK(callObjects(r.out).size() < callObjects(plain.out).size());
  }
}
