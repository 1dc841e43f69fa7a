// The Delve codec against JSON recorded from the real dlv 1.20.2
// (fixtures/delve/, re-recorded by scripts/record-delve-json.sh):
//  - every reply decodes, and re-encodes to the same JSON (Go's nil and empty
//    slices/maps aside), so no key is misspelled, missed or mistyped;
//  - every request, as dlv's server re-encoded it from its Go In struct,
//    round-trips *exactly*, and the requests goscope builds in C++ encode to
//    exactly what dlv's own structs produce.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "rpc/delve_errors.hpp"
#include "rpc/delve_types.hpp"

namespace json = boost::json;
using namespace goscope;
using namespace goscope::rpc;

namespace {

std::string dir() { return std::string(GOSCOPE_SOURCE_DIR) + "/fixtures/delve"; }

json::value load(const std::string& file) {
  std::ifstream in(dir() + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

bool isNil(const json::value& v) {
  return v.is_null() || (v.is_array() && v.get_array().empty()) || (v.is_object() && v.get_object().empty());
}

// Compares two JSON values; `goNil` treats null, [] and {} as one (Go's nil
// and empty slices/maps, which C++ containers do not tell apart). Returns
// the path of the first difference, empty when equal.
std::string diff(const json::value& a, const json::value& b, bool goNil, const std::string& path = "$") {
  if (goNil && isNil(a) && isNil(b)) return {};
  if (a.is_object() && b.is_object()) {
    for (const auto& kv : a.get_object()) {
      const json::value* other = b.get_object().if_contains(kv.key());
      if (!other) return path + "." + std::string(kv.key()) + " missing after re-encoding";
      if (auto d = diff(kv.value(), *other, goNil, path + "." + std::string(kv.key())); !d.empty()) return d;
    }
    for (const auto& kv : b.get_object())
      if (!a.get_object().contains(kv.key())) return path + "." + std::string(kv.key()) + " added by re-encoding";
    return {};
  }
  if (a.is_array() && b.is_array()) {
    if (a.get_array().size() != b.get_array().size()) return path + ": array sizes differ";
    for (size_t i = 0; i < a.get_array().size(); ++i)
      if (auto d = diff(a.get_array()[i], b.get_array()[i], goNil, path + "[" + std::to_string(i) + "]"); !d.empty()) return d;
    return {};
  }
  if (a == b) return {};
  return path + ": " + json::serialize(a) + " != " + json::serialize(b);
}

template <class T>
std::string roundTrip(const json::value& v, bool goNil) {
  auto decoded = decode<T>(v);
  if (!decoded) return "decode failed: " + decoded.error().message;
  return diff(v, json::value_from(*decoded), goNil);
}

struct Codec {
  std::function<std::string(const json::value&)> request;  // exact
  std::function<std::string(const json::value&)> reply;    // modulo Go nil
};

template <class In, class Out>
Codec codec() {
  return {[](const json::value& v) { return roundTrip<In>(v, false); },
          [](const json::value& v) { return roundTrip<Out>(v, true); }};
}

const std::map<std::string, Codec>& codecs() {
  static const std::map<std::string, Codec> m = {
      {"State", codec<StateIn, StateOut>()},
      {"Command", codec<DebuggerCommand, CommandOut>()},
      {"FindLocation", codec<FindLocationIn, FindLocationOut>()},
      {"CreateBreakpoint", codec<CreateBreakpointIn, CreateBreakpointOut>()},
      {"ClearBreakpoint", codec<ClearBreakpointIn, ClearBreakpointOut>()},
      {"ListBreakpoints", codec<ListBreakpointsIn, ListBreakpointsOut>()},
      {"Eval", codec<EvalIn, EvalOut>()},
      {"Set", codec<SetIn, SetOut>()},
      {"ListGoroutines", codec<ListGoroutinesIn, ListGoroutinesOut>()},
      {"Stacktrace", codec<StacktraceIn, StacktraceOut>()},
      {"ListFunctions", codec<ListFunctionsIn, ListFunctionsOut>()},
      {"ListPackageVars", codec<ListPackageVarsIn, ListPackageVarsOut>()},
      {"Detach", codec<DetachIn, DetachOut>()},
      {"GetVersion", codec<GetVersionIn, GetVersionOut>()},
  };
  return m;
}

template <class Out>
Out result(const std::string& name) {
  auto v = load(name + ".reply.json");
  auto out = decode<Out>(v.at("result"));
  REQUIRE_MESSAGE(out.has_value(), name);
  return *out;
}

const Thread* threadAtBreakpoint(const DebuggerState& s) {
  for (const auto& t : s.threads)
    if (t.breakpoint && t.breakpoint->id > 0) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("every recorded dlv exchange round-trips through the codec") {
  int replies = 0, requests = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir())) {
    const std::string file = entry.path().filename().string();
    const std::string method = file.substr(0, file.find('.'));
    CAPTURE(file);
    auto it = codecs().find(method);
    REQUIRE_MESSAGE(it != codecs().end(), "no codec for recorded method " << method);
    json::value v = load(file);
    if (file.ends_with(".request.json")) {
      CHECK(it->second.request(v) == "");
      ++requests;
    } else if (file.ends_with(".reply.json")) {
      REQUIRE(v.is_object());
      CHECK(v.as_object().contains("id"));
      if (v.at("error").is_null()) CHECK(it->second.reply(v.at("result")) == "");
      else CHECK(v.at("result").is_null());
      ++replies;
    }
  }
  CHECK(replies >= 30);
  CHECK(requests == replies);
}

TEST_CASE("requests built in C++ encode exactly as Delve's Go structs do") {
  auto same = [](const json::value& ours, const std::string& recorded) {
    CAPTURE(recorded);
    CHECK(diff(load(recorded + ".request.json"), ours, false) == "");
  };
  same(json::value_from(StateIn{true}), "State.stopped");
  same(json::value_from(StateIn{false}), "State.blocking");
  same(json::value_from(DebuggerCommand{kContinue}), "Command.continue-hit");
  same(json::value_from(DebuggerCommand{kHalt}), "Command.halt");
  same(json::value_from(DetachIn{}), "Detach.keep");
  same(json::value_from(EvalIn{{}, "main.counter", std::nullopt}), "Eval.int64");
  same(json::value_from(SetIn{{}, "main.counter", "5"}), "Set.int64");
  same(json::value_from(ClearBreakpointIn{9999, ""}), "ClearBreakpoint.unknown");
  same(json::value_from(ListBreakpointsIn{true}), "ListBreakpoints.all");
  same(json::value_from(FindLocationIn{{}, "main.doWork", false, {}}), "FindLocation.function");
  same(json::value_from(ListFunctionsIn{"^main\\."}), "ListFunctions.main");
  same(json::value_from(ListGoroutinesIn{0, 10}), "ListGoroutines.first");
  same(json::value_from(StacktraceIn{1, 3, true, false, 0, kDefaultLoadConfig}), "Stacktrace.full");
  same(json::value_from(ListPackageVarsIn{"^main\\.counter", kDefaultLoadConfig}), "ListPackageVars.main");

  CreateBreakpointIn bp;
  bp.breakpoint.functionName = "main.doWork";
  bp.breakpoint.goroutine = true;
  bp.breakpoint.stacktrace = 2;
  bp.breakpoint.variables = {"main.counter"};
  bp.breakpoint.loadArgs = kDefaultLoadConfig;
  bp.breakpoint.loadLocals = kDefaultLoadConfig;
  same(json::value_from(bp), "CreateBreakpoint.capture");

  // What DelveSession sends: FindLocation's address plus the expression.
  auto loc = result<FindLocationOut>("FindLocation.function").locations.at(0);
  CreateBreakpointIn at;
  at.breakpoint.addr = loc.pc;
  at.breakpoint.addrs = loc.pcs;
  at.breakpoint.cond = "main.counter < 0";
  at.locExpr = "main.doWork";
  same(json::value_from(at), "CreateBreakpoint.locexpr");
}

TEST_CASE("Breakpoint keys that are easy to get wrong") {
  Breakpoint b;
  b.tracepoint = true;
  b.cond = "x == 1";
  b.hitCond = "> 2";
  json::object o = json::value_from(b).as_object();
  CHECK(o.at("continue") == true);  // Tracepoint's tag
  CHECK_FALSE(o.contains("Tracepoint"));
  CHECK(o.at("Cond") == "x == 1");
  CHECK(o.at("HitCond") == "> 2");
  CHECK_FALSE(o.contains("UserData"));
  CHECK_FALSE(o.contains("functionName"));  // omitempty
  CHECK(o.at("addrs").is_null());           // a nil slice
}

TEST_CASE("decoded replies carry what the session reads") {
  SUBCASE("a stopped target after attach") {
    auto s = result<StateOut>("State.stopped");
    REQUIRE(s.state);
    CHECK_FALSE(s.state->running);
    CHECK(s.state->pid > 0);
    CHECK(s.state->currentThread.has_value());
    CHECK(s.state->selectedGoroutine.has_value());
    CHECK(s.state->threads.size() >= 2);
  }
  SUBCASE("a running target answers a non-blocking State with little else") {
    auto s = result<StateOut>("State.running");
    REQUIRE(s.state);
    CHECK(s.state->running);
    CHECK(s.state->threads.empty());
  }
  SUBCASE("eval of an int64 global") {
    auto v = result<EvalOut>("Eval.int64").variable;
    REQUIRE(v);
    CHECK(v->name == "main.counter");
    CHECK(v->type == "int64");
    CHECK(std::stoll(v->value) >= 0);
  }
  SUBCASE("eval of a string, a slice of strings, a struct") {
    auto str = result<EvalOut>("Eval.string").variable;
    REQUIRE(str);
    CHECK(str->kind == uint64_t(GoKind::String));
    CHECK(str->value.rfind("go1.", 0) == 0);
    CHECK(str->len == int64_t(str->value.size()));
    auto slice = result<EvalOut>("Eval.slice").variable;
    REQUIRE(slice);
    CHECK(slice->type == "[]string");
    CHECK(slice->kind == uint64_t(GoKind::Slice));
    CHECK(slice->len == int64_t(slice->children.size()));
    CHECK(slice->children.at(0).kind == uint64_t(GoKind::String));
    auto st = result<EvalOut>("Eval.struct").variable;
    REQUIRE(st);
    CHECK(st->kind == uint64_t(GoKind::Struct));
    CHECK(st->children.size() > 5);
    CHECK_FALSE(st->children.at(0).name.empty());
  }
  SUBCASE("a breakpoint hit with captured variables, goroutine and stack") {
    auto s = result<CommandOut>("Command.continue-hit").state;
    const Thread* t = threadAtBreakpoint(s);
    REQUIRE(t != nullptr);
    CHECK(t->breakpoint->functionName == "main.doWork");
    REQUIRE(t->breakpointInfo);
    REQUIRE(t->breakpointInfo->variables.size() == 1);
    CHECK(t->breakpointInfo->variables[0].name == "main.counter");
    CHECK(t->breakpointInfo->goroutine.has_value());
    CHECK(t->breakpointInfo->stacktrace.size() == 3);
    CHECK(t->breakpointInfo->stacktrace[0].location.function->name == "main.doWork");
  }
  SUBCASE("a conditional breakpoint hit with arguments") {
    auto s = result<CommandOut>("Command.continue-args").state;
    const Thread* t = threadAtBreakpoint(s);
    REQUIRE(t != nullptr);
    CHECK(t->breakpoint->cond == "x == 42");
    CHECK(t->breakpoint->hitCond == "> 1");
    REQUIRE(t->breakpointInfo);
    REQUIRE(t->breakpointInfo->arguments.size() >= 2);
    CHECK(t->breakpointInfo->arguments[0].name == "x");
    CHECK(t->breakpointInfo->arguments[0].value == "42");
    CHECK(t->breakpointInfo->arguments[1].value == "13");
    // register-resident arguments get a fake address above 2^63
    CHECK(t->breakpointInfo->arguments[0].addr > uint64_t(INT64_MAX));
  }
  SUBCASE("continue until the target exits") {
    auto s = result<CommandOut>("Command.continue-exited").state;
    CHECK(s.exited);
    CHECK(s.exitStatus == 0);
  }
  SUBCASE("Delve's internal breakpoints are listed too") {
    auto bps = result<ListBreakpointsOut>("ListBreakpoints.user").breakpoints;
    int internal = 0, user = 0;
    for (const auto& b : bps) (b.id < 0 ? internal : user)++;
    CHECK(internal >= 1);
    CHECK(user == 1);
  }
  SUBCASE("a function location") {
    auto locs = result<FindLocationOut>("FindLocation.function").locations;
    REQUIRE(locs.size() == 1);
    CHECK(locs[0].function->name == "main.doWork");
    CHECK(locs[0].pc == locs[0].pcs.at(0));
  }
}

TEST_CASE("dlv's error replies become one-line errors with a kind") {
  auto errorOf = [](const std::string& name) {
    auto v = load(name + ".reply.json");
    return delveError(name.substr(0, name.find('.')), std::string(v.at("error").as_string()));
  };
  CHECK(errorOf("Eval.unknown").kind == ErrorKind::NoMatch);
  CHECK(errorOf("Eval.unqualified").kind == ErrorKind::NoMatch);
  CHECK(errorOf("CreateBreakpoint.exists").kind == ErrorKind::Usage);
  CHECK(errorOf("Eval.syntax").kind == ErrorKind::Usage);
  CHECK(errorOf("FindLocation.unknown").kind == ErrorKind::NoMatch);
  CHECK(errorOf("ClearBreakpoint.unknown").kind == ErrorKind::NoMatch);
  auto e = errorOf("CreateBreakpoint.unknown");
  CHECK(e.kind == ErrorKind::NoMatch);
  CHECK(e.message.find('\n') == std::string::npos);
  CHECK(errorOf("State.exited").kind == ErrorKind::TargetGone);
  CHECK(delveError("Eval", "could not find symbol value for nosuch").kind == ErrorKind::NoMatch);
  // A panic inside Delve is Delve's failure (exit 7), not the expression's.
  auto internal = delveError("Eval", "Internal debugger error: runtime error: invalid memory address or nil pointer dereference");
  CHECK(internal.kind == ErrorKind::External);
  CHECK(internal.message == "Delve Eval: Internal debugger error: runtime error: invalid memory address or nil pointer dereference");
}

TEST_CASE("decoding is Go-tolerant but type-strict") {
  SUBCASE("unknown keys are ignored, missing keys and nulls leave zero values") {
    auto v = decode<Variable>(json::parse(R"({"name":"x","futureKey":{"a":1},"children":null,"len":null})"));
    REQUIRE(v);
    CHECK(v->name == "x");
    CHECK(v->children.empty());
    CHECK(v->len == 0);
  }
  SUBCASE("a wrong type names the key") {
    auto v = decode<DebuggerState>(json::parse(R"({"Threads":[{"id":"seven"}]})"));
    REQUIRE_FALSE(v);
    CHECK(v.error().message.find("Threads.id") != std::string::npos);
  }
  SUBCASE("out-of-range integers are refused") {
    CHECK_FALSE(decode<Function>(json::parse(R"({"type":300})")));
    CHECK_FALSE(decode<Variable>(json::parse(R"({"addr":-1})")));
    CHECK_FALSE(decode<Variable>(json::parse(R"({"len":1.5})")));
  }
}
