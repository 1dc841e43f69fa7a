// Inlined functions as probe locations (docs/go-runtime.md, "Inlined calls"),
// on the `inlined` fixture (fixtures/go/inlined), whose functions count their
// own calls and print the totals: goscope's counts must equal them exactly in
// every build variant (nopt: nothing is inlined, the same names are ordinary
// functions); list shows each inlined body with its caller and call site;
// trace delivers inlined calls with the caller and file:line and says their
// arguments are unavailable; --stack shows the inlined frame over its caller.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "support/go_samples.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "binary/go_binary.hpp"
#include "binary/inline_sites.hpp"

using namespace goscope::test;

namespace {

const char* const kNames[] = {"main.square", "main.isEven", "main.addOne", "main.sumTo"};

// The fixture's last line, "square=S isEven=E addOne=A sumTo=T": its own counts.
std::map<std::string, int64_t> ownCounts(const std::string& text) {
  std::map<std::string, int64_t> m;
  std::smatch sm;
  std::string last;
  for (const auto& line : splitLines(text))
    if (line.starts_with("square=")) last = line;
  static const std::regex kv(R"((\w+)=(\d+))");
  for (auto it = std::sregex_iterator(last.begin(), last.end(), kv); it != std::sregex_iterator(); ++it)
    m["main." + (*it)[1].str()] = std::stoll((*it)[2].str());
  return m;
}

std::vector<boost::json::object> jsonLines(const std::string& out) {
  std::vector<boost::json::object> v;
  for (const auto& line : splitLines(out))
    if (!line.empty() && line[0] == '{') v.push_back(boost::json::parse(line).as_object());
  return v;
}

}  // namespace

TEST_CASE("inlined: count equals the fixture's own counts in every variant, inlined or called") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("count --json -c '" + fixture("inlined", v) +
                    " --repeat 3' main.square main.isEven main.addOne main.sumTo");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto got = finalCounts(r.out);
    auto own = ownCounts(r.err);  // the target's stdout goes to stderr under --json
    REQUIRE(own.size() == 4);
    // A round: square 13, isEven 10, addOne 12 (7 inlined + 5 through a func value), sumTo 4.
    CHECK(own["main.square"] == 3 * 13);
    CHECK(own["main.isEven"] == 3 * 10);
    CHECK(own["main.addOne"] == 3 * 12);
    CHECK(own["main.sumTo"] == 3 * 4);
    for (const char* name : kNames) {
      CAPTURE(name);
      CHECK(got[name] == own[name]);
    }
    CHECK(r.err.find("inlined bodies left out") == std::string::npos);
  }
}

TEST_CASE("inlined: list shows each inlined body with its caller and call site, --json inlined_into and sites") {
  auto r = runCli("list --json -b " + fixture("inlined") + " main.square main.addOne");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  std::multimap<std::string, boost::json::object> inlinedInto;  // callee -> row
  bool addOneItself = false;
  for (auto& o : jsonLines(r.out)) {
    std::string name(o["func"].as_string());
    if (!o.contains("inlined_into")) {
      addOneItself = addOneItself || name == "main.addOne";
      CHECK(name != "main.square");  // every call of square is inlined: no function of its own
      continue;
    }
    CHECK(o["probe_kind"].as_string() == "inlined");
    CHECK(o["sites"].as_int64() == 1);
    CHECK(o["probe"].is_string());
    CHECK(std::string(o["file"].as_string()).ends_with("fixtures/go/inlined/main.go"));
    inlinedInto.emplace(name, o);
  }
  CHECK(addOneItself);  // called through a func value: a function too
  std::multiset<std::string> squareCallers;
  for (auto [it, end] = inlinedInto.equal_range("main.square"); it != end; ++it)
    squareCallers.insert(std::string(it->second["inlined_into"].as_string()) + ":" +
                         std::to_string(it->second["line"].as_int64()));
  CHECK(squareCallers == std::multiset<std::string>{"main.sumSquares:74", "main.twoSquares:81", "main.twoSquares:81",
                                                    "main.round:127"});
  REQUIRE(inlinedInto.count("main.addOne") == 1);
  CHECK(inlinedInto.find("main.addOne")->second["inlined_into"].as_string() == "main.bump");

  // Text: marked with the caller and the call's file:line.
  auto t = runCli("list -b " + fixture("inlined") + " main.isEven");
  REQUIRE_MESSAGE(t.exitCode == 0, t.err);
  CHECK_MESSAGE(t.out.find("main.isEven  [inlined into main.evens at ") != std::string::npos, t.out);
  CHECK(t.out.find("main.go:88]") != std::string::npos);

  // Without optimization nothing is inlined: only functions.
  auto n = runCli("list --json -b " + fixture("inlined", "nopt") + " main.square");
  REQUIRE_MESSAGE(n.exitCode == 0, n.err);
  auto rows = jsonLines(n.out);
  REQUIRE(rows.size() == 1);
  CHECK(!rows[0].contains("inlined_into"));
}

TEST_CASE("inlined: trace prints each inlined call with goroutine, caller and file:line, arguments unavailable") {
  auto r = runCli("trace -c '" + fixture("inlined") + "' main.isEven");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  size_t calls = 0;
  for (const auto& line : splitLines(r.out)) {
    if (line.find("main.isEven(") == std::string::npos) continue;
    calls++;
    CHECK_MESSAGE(line.find("goid=1 main.isEven(unavailable: inlined)  [inlined into main.evens at main.go:88]") !=
                      std::string::npos,
                  line);
  }
  CHECK(calls == 10);

  // Both inlined and called: the inlined calls at once, the others with
  // their arguments and results at the return.
  auto both = runCli("trace -c '" + fixture("inlined") + "' main.addOne");
  REQUIRE_MESSAGE(both.exitCode == 0, both.err);
  size_t inl = 0, called = 0;
  for (const auto& line : splitLines(both.out)) {
    if (line.find("main.addOne(unavailable: inlined)  [inlined into main.bump at main.go:99]") != std::string::npos) inl++;
    else if (std::regex_search(line, std::regex(R"(main\.addOne\(x=\d\) = \d  \[)"))) called++;
  }
  CHECK(inl == 7);
  CHECK(called == 5);

  auto j = runCli("trace --json -c '" + fixture("inlined") + "' main.sumTo");
  REQUIRE_MESSAGE(j.exitCode == 0, j.err);
  auto events = jsonLines(j.out);
  size_t n = 0;
  for (auto& o : events) {
    if (!o.contains("func") || o["func"].as_string() != "main.sumTo") continue;
    n++;
    CHECK(o["args"].is_null());
    CHECK(o["args_unavailable"].as_string() == "inlined");
    CHECK(o["inlined_into"].as_string() == "main.triangles");
    CHECK(o["line"].as_int64() == 117);
  }
  CHECK(n == 4);
}

TEST_CASE("inlined: --stack shows the inlined frame over its caller and the caller's callers") {
  for (const std::string v : {"default", "pie"}) {
    CAPTURE(v);
    // square inlined into a leaf without a frame (sumSquares) and into one with a frame (round).
    auto r = runCli("trace --json --stack -c '" + fixture("inlined", v) + "' main.square");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    std::multiset<std::string> stacks;
    for (auto& o : jsonLines(r.out)) {
      if (!o.contains("stack")) continue;
      std::string s;
      for (auto& f : o["stack"].as_array()) {
        std::string fr(f.as_string());
        s += (s.empty() ? "" : ";") + fr.substr(0, fr.find(' '));
        if (fr.find("main.main") != std::string::npos) break;
      }
      stacks.insert(s);
    }
    CHECK(stacks.size() == 13);
    CHECK(stacks.count("main.square;main.sumSquares;main.round;main.main") == 10);
    CHECK(stacks.count("main.square;main.twoSquares;main.round;main.main") == 2);
    CHECK(stacks.count("main.square;main.round;main.main") == 1);
  }
}

// The inline tree's two layouts (20-byte entries to Go 1.19, 16-byte after)
// on release binaries: every instruction chosen lies in its body (the pc's
// inline frames name the callee, the outermost the caller), and most bodies
// get one.
TEST_CASE("inlined: on Go 1.16 to 1.27 release binaries each probed instruction lies in its inlined body") {
  const auto found = goSamples();
  if (!found) return;
  const std::vector<std::filesystem::path>& samples = *found;
  for (const auto& sample : samples) {
    INFO(sample.string());
    auto bin = goscope::GoBinary::open(sample.string());
    REQUIRE(bin.has_value());
    const auto& pcln = (*bin)->pclntab();
    size_t sites = 0, probed = 0, wrong = 0;
    std::string firstWrong;
    const auto& fns = pcln.functions();
    // Every 7th function: all kinds of callers, in seconds.
    for (size_t i = 0; i < fns.size(); i += 7) {
      for (const auto& s : goscope::inlinedSitesIn(**bin, fns[i])) {
        sites++;
        if (s.probes.empty()) continue;
        probed++;
        for (uint64_t p : s.probes) {
          auto frames = pcln.symbolize(p);
          bool inBody = std::any_of(frames.begin(), frames.end(),
                                    [&](const goscope::SourceFrame& f) { return f.inlined && f.function == s.callee; });
          if (!inBody || frames.empty() || frames.back().function != fns[i].name) {
            if (wrong++ == 0) firstWrong = s.callee + " in " + fns[i].name;
          }
        }
      }
    }
    MESSAGE(sample.filename().string() << ": " << sites << " inlined bodies in every 7th function, " << probed << " probed");
    CHECK(sites > 500);
    CHECK(probed * 10 > sites * 6);  // most
    CHECK_MESSAGE(wrong == 0, firstWrong);
  }
}
