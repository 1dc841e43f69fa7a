// The tools goscope mcp offers and the commands that serve them: pure
// mapping, checked here; the server itself is tested with the MCP SDK
// against real fixtures (tests/runtime/test_mcp.cpp).
#include <doctest/doctest.h>

#include <algorithm>

#include "cli/mcp_tools.hpp"

using namespace goscope;
using namespace goscope::cli::mcp;
namespace json = boost::json;

namespace {

std::vector<std::string> names(const json::array& tools) {
  std::vector<std::string> n;
  for (const auto& t : tools) n.emplace_back(t.as_object().at("name").as_string());
  return n;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

Result<Command> cmd(const std::string& tool, const char* args, const Limits& l = {}) {
  return commandFor(tool, json::parse(args).as_object(), l);
}

}  // namespace

TEST_CASE("mcp tools: break and set are offered only when the server allows stops and writes") {
  Limits l;
  auto n = names(toolList(l));
  for (const char* t : {"list", "info", "count", "latency", "trace", "read", "overhead_estimate"}) CHECK(has(n, t));
  CHECK_FALSE(has(n, "break"));
  CHECK_FALSE(has(n, "set"));
  auto b = cmd("break", R"({"pid": 1, "function": "main.f"})");
  REQUIRE_FALSE(b);
  CHECK(b.error().kind == ErrorKind::Permission);
  CHECK(b.error().message.find("--allow-stop") != std::string::npos);
  auto s = cmd("set", R"({"pid": 1, "assignments": ["main.x=1"]})");
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("--allow-write") != std::string::npos);
  l.allowStop = l.allowWrite = true;
  n = names(toolList(l));
  CHECK(has(n, "break"));
  CHECK(has(n, "set"));
  // Every tool's schema is an object schema that admits no other argument.
  for (const auto& t : toolList(l)) {
    const auto& schema = t.as_object().at("inputSchema").as_object();
    CHECK(schema.at("type") == "object");
    CHECK(schema.at("additionalProperties") == false);
    CHECK_FALSE(t.as_object().at("description").as_string().empty());
  }
}

TEST_CASE("mcp tools: probing calls carry the server's budget and --no-stop, and their limits") {
  Limits l;
  l.budgetPct = 2.5;
  auto c = cmd("count", R"({"pid": 42, "patterns": ["main.*"], "duration_s": 3})", l);
  REQUIRE(c);
  const std::vector<std::string> want = {"count", "--json", "-p", "42", "-d", "3", "--max-overhead", "2.5", "--no-stop", "main.*"};
  CHECK(c->args == want);
  CHECK(c->probeSeconds == 3);
  CHECK(c->listArgs == std::vector<std::string>{"list", "--json", "-p", "42", "main.*"});
  // The default duration; over the maximum is refused, not cut.
  c = cmd("latency", R"({"pid": 42, "patterns": ["main.f"]})", l);
  REQUIRE(c);
  CHECK(c->probeSeconds == l.defaultDurationS);
  auto over = cmd("count", R"({"pid": 42, "patterns": ["main.f"], "duration_s": 61})", l);
  REQUIRE_FALSE(over);
  CHECK(over.error().message.find("duration_s") != std::string::npos);
  // With --allow-stop, no --no-stop.
  l.allowStop = true;
  c = cmd("trace", R"j({"pid": 7, "specs": ["main.add(x int, y int) int"], "max_events": 5})j", l);
  REQUIRE(c);
  CHECK(std::find(c->args.begin(), c->args.end(), "--no-stop") == c->args.end());
  CHECK(std::find(c->args.begin(), c->args.end(), "5") != c->args.end());
  CHECK(c->listArgs.back() == "main.add");  // the signature's function is what list counts
  c = cmd("trace", R"j({"pid": 7, "specs": ["main.(*Server).Handle(n int)"]})j", l);
  REQUIRE(c);
  CHECK(c->listArgs.back() == "main.(*Server).Handle");
  auto many = cmd("trace", R"({"pid": 7, "specs": ["main.f"], "max_events": 1001})", l);
  REQUIRE_FALSE(many);
}

TEST_CASE("mcp tools: bad arguments are refused with the tool's name and the reason") {
  struct Case {
    const char* tool;
    const char* args;
    const char* says;
  } cases[] = {
      {"count", R"({"patterns": ["main.f"]})", "pid is required"},
      {"count", R"({"pid": 1})", "patterns is required"},
      {"count", R"({"pid": 1, "patterns": []})", "at least one"},
      {"count", R"({"pid": 1, "patterns": ["-d"]})", "starts with '-'"},
      {"count", R"({"pid": "1", "patterns": ["main.f"]})", "pid wants an integer"},
      {"count", R"({"pid": 0, "patterns": ["main.f"]})", "from 1"},
      {"count", R"({"pid": 1, "patterns": ["main.f"], "frobnicate": 1})", "unknown argument 'frobnicate'"},
      {"count", R"({"pid": 1, "patterns": ["main.f"], "duration_s": -1})", "duration_s wants a number above 0"},
      {"list", R"({})", "either pid or binary"},
      {"list", R"({"pid": 1, "binary": "/bin/x"})", "either pid or binary"},
      {"read", R"({"pid": 1, "expressions": [3]})", "non-empty strings"},
      {"overhead_estimate", R"({"pid": 1, "patterns": ["main.f"], "mode": "x"})", "mode wants count, latency or trace"},
      {"nosuch", R"({})", "no tool named 'nosuch'"},
  };
  for (const auto& k : cases) {
    CAPTURE(k.args);
    auto c = cmd(k.tool, k.args);
    REQUIRE_FALSE(c);
    CHECK(c.error().message.find(k.says) != std::string::npos);
  }
}

TEST_CASE("mcp tools: read is zero-pause unless stops are allowed, list keeps a number of rows") {
  auto r = cmd("read", R"({"pid": 9, "expressions": ["main.counter"]})");
  REQUIRE(r);
  CHECK(r->args == std::vector<std::string>{"read", "--json", "-p", "9", "--no-stop", "main.counter"});
  auto l = cmd("list", R"({"binary": "/srv/app", "patterns": ["main.*"], "max_results": 3})");
  REQUIRE(l);
  CHECK(l->args == std::vector<std::string>{"list", "--json", "-b", "/srv/app", "main.*"});
  CHECK(l->maxRecords == 3);
  auto e = cmd("overhead_estimate", R"({"pid": 9, "patterns": ["main.f"], "calls_per_second": 1000, "mode": "latency"})");
  REQUIRE(e);
  CHECK(e->estimate);
  CHECK(e->estimateLatency);
  CHECK(*e->estimateRate == 1000);
  CHECK(e->probeSeconds == 0);  // nothing is probed
}

TEST_CASE("mcp tools: the allow-lists") {
  Limits l;
  CHECK(refusalByAllowLists(l, 5, "/x").empty());
  l.pids = {5};
  CHECK(refusalByAllowLists(l, 5, "/x").empty());
  CHECK(refusalByAllowLists(l, 6, "/x").find("--pid") != std::string::npos);
  CHECK(refusalByAllowLists(l, 0, "/x").find("--pid") != std::string::npos);
  l.binaries = {"/srv/app"};
  CHECK(refusalByAllowLists(l, 5, "/x").find("--binary") != std::string::npos);
  CHECK(refusalByAllowLists(l, 5, "/srv/app").empty());
  CHECK(refusalByAllowLists(l, 0, "/srv/app").empty());
}

TEST_CASE("mcp tools: protocol versions: the client's when spoken, else the newest") {
  CHECK(negotiatedVersion("2025-06-18") == "2025-06-18");
  CHECK(negotiatedVersion("2025-11-25") == "2025-11-25");
  CHECK(negotiatedVersion("2024-11-05") == "2024-11-05");
  CHECK(negotiatedVersion("1999-01-01") == protocolVersions().front());
  CHECK(negotiatedVersion("") == protocolVersions().front());
}
