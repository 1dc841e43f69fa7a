// Probing every function of main.* together with every runtime.* function
// that is safe to probe: the target keeps running, its own self-check stays
// correct, and goscope's figures agree with the target's own counts.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <map>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/zoo_status.hpp"

using namespace goscope::test;


TEST_CASE("latency on main.* and runtime.*: zoo stays correct, counts agree, every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("latency --json -c '" + fixture("zoo", v) + " --rounds 3 --json' 'main.*' 'runtime.*'");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto zoo = lastZooStatus(r.err);
    REQUIRE(zoo.contains("ok"));
    CHECK(zoo["ok"].as_bool());
    CHECK(zoo["rounds"].as_int64() == 3);
    std::map<std::string, boost::json::object> lat;
    for (const auto& l : splitLines(r.out)) {
      auto o = boost::json::parse(l).as_object();
      if (o.contains("func")) lat[std::string(o["func"].as_string())] = o;  // (and one session_cost object)
    }
    CHECK(lat.size() > 100);  // the runtime is busy too
    CHECK(lat.count("runtime.mallocgc"));
    for (const auto& [name, n] : zoo["calls"].as_object()) {
      std::string f(name);
      if (f.starts_with("main.Map[") || f == "main.double" || f == "main.worker") continue;  // shared pclntab name; inlined; never returns
      CAPTURE(f);
      REQUIRE(lat.count(f));
      CHECK(lat[f]["count"].as_int64() == n.as_int64());
      CHECK(lat[f]["mismatches"].as_int64() == 0);
    }
  }
}

TEST_CASE("trace on every main.* function: one line per call, target correct") {
  auto r = runCli("trace --json -c '" + fixture("zoo") + " --rounds 2 --json' 'main.*'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  auto zoo = lastZooStatus(r.err);
  REQUIRE(zoo.contains("ok"));
  CHECK(zoo["ok"].as_bool());
  std::map<std::string, int64_t> lines;
  for (auto& o : callObjects(r.out)) lines[std::string(o["func"].as_string())]++;
  CHECK(lines["main.add"] == zoo["calls"].as_object()["main.add"].as_int64());
  CHECK(lines["main.deepRecurse"] == zoo["calls"].as_object()["main.deepRecurse"].as_int64());
  CHECK(r.err.find("events lost") == std::string::npos);
}
