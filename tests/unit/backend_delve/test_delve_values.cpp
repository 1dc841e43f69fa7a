// How read, sample, break and set render Delve's values, on Variables
// recorded from the real dlv 1.20.2 (fixtures/delve-values/zoo.json, made by
// scripts/record-delve-values.py against `zoo --sleep-ms 100000`, with small
// load limits so that truncation shows); the Go version guard on
// GetVersion replies; plain-decimal JSON numbers. And one breakpoint hit's
// Variables (fixtures/delve-values/nested.json, scripts/record-delve-hit.py
// against fixtures/go/nested): labels, and values past Delve's load depth.
#include <doctest/doctest.h>

#include "value/go_quote.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "backend/delve/dlv_startup.hpp"
#include "backend/delve/values_from_delve.hpp"
#include "value/render.hpp"
#include "util/json_text.hpp"

using namespace goscope;
using namespace goscope::delve;

namespace {

const boost::json::object& recorded() {
  static const boost::json::object all = [] {
    std::ifstream in(std::string(GOSCOPE_SOURCE_DIR) + "/fixtures/delve-values/zoo.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return boost::json::parse(ss.str()).as_object();
  }();
  return all;
}

rpc::Variable var(const std::string& expr) {
  const auto* jv = recorded().if_contains(expr);
  REQUIRE_MESSAGE(jv, "not recorded: " << expr);
  auto v = rpc::decode<rpc::Variable>(*jv);
  REQUIRE(v.has_value());
  return *v;
}

struct Rendered {
  std::string text, type, json;
};

Rendered render(const std::string& expr) {
  auto v = var(expr);
  const Value x = valueFromDelve(v);
  return {renderText(x), x.type, jsonText(renderJson(x))};
}

}  // namespace

TEST_CASE("delve values: scalars, strings and untyped constants") {
  auto name = render("main.cfg.Name");
  CHECK(name.text == "\"zoo\"");
  CHECK(name.type == "string");
  CHECK(name.json == "\"zoo\"");
  auto n = render("len(main.items)");  // Delve leaves the type of len() empty
  CHECK(n.text == "3");
  CHECK(n.type == "int");
  CHECK(n.json == "3");
  CHECK(render("uint8(200)").json == "200");
  CHECK(render("uint8(200)").type == "uint8");
  CHECK(render("main.cfg.Ratio").json == "0.75");  // not Boost's 7.5E-1
  CHECK(render("main.cfg.Verbose").json == "false");
  auto c = render("complex(1.5, 2)");
  CHECK(c.text == "(1.5+2i)");  // Go's %v of a complex128
  CHECK(c.json == "{\"real\":1.5,\"imag\":2}");
  CHECK(render("main.add").text == "main.add");
}

TEST_CASE("delve values: composites as Go-like text and as JSON") {
  auto cfg = render("main.cfg");
  CHECK(cfg.type == "main.Config");
  CHECK(cfg.text ==
        "main.Config{Name: \"zoo\", Workers: 8, SleepMs: 100000, Rounds: 0, Ratio: 0.75, Verbose: false, "
        "Tags: []string{len=2 cap=3: \"alpha\", \"beta\"}, Labels: map[string]int{len=3: \"red\": 1, \"green\": 2, \"blue\": 3}}");
  CHECK(cfg.json ==
        "{\"Name\":\"zoo\",\"Workers\":8,\"SleepMs\":100000,\"Rounds\":0,\"Ratio\":0.75,\"Verbose\":false,"
        "\"Tags\":{\"len\":2,\"cap\":3,\"elems\":[\"alpha\",\"beta\"]},\"Labels\":{\"red\":1,\"green\":2,\"blue\":3}}");
  auto items = render("main.items");
  CHECK(items.text == "[]string{len=3 cap=3: \"alpha\", \"beta\", \"gamma\"}");
  CHECK(items.json == "{\"len\":3,\"cap\":3,\"elems\":[\"alpha\",\"beta\",\"gamma\"]}");
  auto labels = render("main.labels");
  CHECK(labels.text == "map[string]int{len=3: \"red\": 1, \"green\": 2, \"blue\": 3}");
  CHECK(labels.json == "{\"red\":1,\"green\":2,\"blue\":3}");
  auto primary = render("main.primary");
  CHECK(primary.text == "&main.Server{Name: \"zoo\", Port: 8080}");
  CHECK(primary.json.starts_with("{\"addr\":\"0xc"));
  CHECK(primary.json.ends_with("\",\"value\":{\"Name\":\"zoo\",\"Port\":8080}}"));
  auto ch = render("runtime.main_init_done");
  CHECK(ch.text == "chan bool{len=0 cap=0}");
  CHECK(ch.json == "{\"len\":0,\"cap\":0}");
}

TEST_CASE("delve values: interfaces, nil, and what Delve did not load") {
  auto err = render("main.errNotFound");  // MaxStringLen 8: "not foun" of 9 bytes
  CHECK(err.text == "error(*errors.errorString)&errors.errorString{s: \"not foun…\"(+1 bytes)}");
  CHECK(err.json.starts_with("{\"type\":\"*errors.errorString\",\"value\":{\"addr\":\"0xc"));
  CHECK(err.json.ends_with("\",\"value\":{\"s\":\"not foun\"}}}"));
  CHECK(render("flag.CommandLine.output").text == "nil");  // a nil io.Writer
  CHECK(render("flag.CommandLine.output").json == "null");
  CHECK(render("main.keepList").text == "nil");  // a nil pointer
  CHECK(render("main.keepBufs[0]").text == "[]uint8(nil)");  // a nil slice
  CHECK(render("main.keepBufs[0]").json == "null");
  auto bufs = render("main.keepBufs");  // MaxArrayValues 4 of 64
  CHECK(bufs.text == "[64][]uint8{[]uint8(nil), []uint8(nil), []uint8(nil), []uint8(nil), …}");
  CHECK(bufs.json == "[null,null,null,null]");
  auto args = render("os.Args");
  CHECK(args.text.find("\"--sleep-…\"(+2 bytes), \"100000\"}") != std::string::npos);
  auto up = render("unsafe.Pointer(main.primary)");
  CHECK(up.text.rfind("0xc", 0) == 0);
  CHECK(up.type == "unsafe.Pointer");

  rpc::Variable deep;  // a struct past MaxVariableRecurse: fields counted, not loaded
  deep.kind = static_cast<uint64_t>(rpc::GoKind::Struct);
  deep.type = "main.node";
  deep.len = 2;
  deep.addr = 0xc000010000;
  CHECK(renderText(valueFromDelve(deep)) == "main.node{…}");
  // Not null, which would say nil; not a string, which a Go string could be.
  CHECK(jsonText(renderJson(valueFromDelve(deep))) == "{\"cut\":true,\"type\":\"main.node\",\"addr\":\"0xc000010000\"}");
}

namespace {

// What one breakpoint hit on main.handle of fixtures/go/nested captured
// (fixtures/delve-values/nested.json, made by scripts/record-delve-hit.py:
// Delve's own per-hit load config, MaxVariableRecurse 1).
const boost::json::object& nestedHit() {
  static const boost::json::object all = [] {
    std::ifstream in(std::string(GOSCOPE_SOURCE_DIR) + "/fixtures/delve-values/nested.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return boost::json::parse(ss.str()).as_object();
  }();
  return all;
}

rpc::Variable hitVar(const std::string& expr) {
  const auto* jv = nestedHit().if_contains(expr);
  REQUIRE_MESSAGE(jv, "not recorded: " << expr);
  auto v = rpc::decode<rpc::Variable>(*jv);
  REQUIRE(v.has_value());
  return *v;
}

const Value* field(const Value& s, const std::string& name) {
  for (const auto& c : s.children)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("delve values: expressions are labelled as typed, not by Delve's last path step") {
  const std::string val = "r.Ctx.(*context.cancelCtx).Context.(*context.valueCtx).val";
  const std::vector<std::string> exprs = {val, "r.ID", "r.Ctx.(*context.cancelCtx).Context"};
  std::vector<rpc::Variable> hit;
  for (const auto& e : exprs) hit.push_back(hitVar(e));
  REQUIRE(hit[0].name == "data.val");  // what Delve calls it (docs/delve.md)
  REQUIRE(hit[2].name == "data.Context");
  auto values = valuesOfExpressions(hit, exprs);
  REQUIRE(values.size() == 3);
  CHECK(values[0].name == val);
  CHECK(renderText(values[0]) == "interface {}(string)\"alice\"");
  CHECK(values[1].name == "r.ID");
  CHECK(renderText(values[1]) == "42");
  CHECK(values[2].name == "r.Ctx.(*context.cancelCtx).Context");
  // More results than expressions (never from Delve): Delve's name is kept.
  hit.push_back(hitVar("r.ID"));
  auto more = valuesOfExpressions(hit, exprs);
  REQUIRE(more.size() == 4);
  CHECK(more[3].name == "r.ID");
}

TEST_CASE("delve values: a live pointer past Delve's load depth is cut, a nil stays nil") {
  Value r = valueFromDelve(hitVar("r"));
  REQUIRE(r.kind == Value::Kind::Pointer);
  REQUIRE(r.children.size() == 1);
  const Value* peerPtr = field(r.children[0], "Peer");
  REQUIRE(peerPtr);
  REQUIRE(peerPtr->children.size() == 1);
  const Value& peer = peerPtr->children[0];

  // Rwc: an io.ReadWriter holding a live *main.Conn, two levels down: Delve
  // marks its dynamic value OnlyAddr and leaves it unloaded.
  const Value* rwc = field(peer, "Rwc");
  REQUIRE(rwc);
  CHECK_FALSE(rwc->nil);
  REQUIRE(rwc->children.size() == 1);
  CHECK(rwc->children[0].elided);
  CHECK_FALSE(rwc->children[0].nil);
  CHECK(renderText(*rwc) == "io.ReadWriter(*main.Conn){…}");
  const std::string rwcJson = jsonText(renderJson(*rwc));
  CHECK(rwcJson.starts_with("{\"type\":\"*main.Conn\",\"value\":{\"cut\":true,\"type\":\"*main.Conn\",\"addr\":\"0xc"));
  // Conn: the same pointer as a field: read, its struct past the depth.
  const Value* conn = field(peer, "Conn");
  REQUIRE(conn);
  CHECK(renderText(*conn) == "&main.Conn{…}");
  CHECK(jsonText(renderJson(*conn)).find("\"value\":{\"cut\":true,\"type\":\"main.Conn\"") != std::string::npos);
  // Real nils at the same depth stay nil.
  CHECK(renderText(*field(peer, "None")) == "nil");
  CHECK(jsonText(renderJson(*field(peer, "None"))) == "null");
  CHECK(renderText(*field(peer, "Closer")) == "nil");
  CHECK(jsonText(renderJson(*field(peer, "Closer"))) == "null");

  const std::string text = renderText(r);
  CHECK(text.find("Peer: &main.Peer{Rwc: io.ReadWriter(*main.Conn){…}, Conn: &main.Conn{…}, None: nil, Closer: nil}") !=
        std::string::npos);
  // r.Ctx's valueCtx is an interface's dynamic value past the depth too.
  CHECK(text.find("Context: context.Context(*context.valueCtx){…}") != std::string::npos);

  // Loaded at the top, the same values are whole.
  CHECK(renderText(valueFromDelve(hitVar("r.Peer.Rwc"))) == "io.ReadWriter(*main.Conn)&main.Conn{FD: 7, Name: \"conn-7\"}");
  CHECK(renderText(valueFromDelve(hitVar("r.Peer.None"))) == "nil");
}

TEST_CASE("delve values: what Delve did not load, kind by kind") {
  // &x: a pointer Delve does not load (Addr 0, Value ""), its target OnlyAddr.
  Value addr = valueFromDelve(hitVar("&r.ID"));
  CHECK_FALSE(addr.nil);
  CHECK(addr.address != 0);
  CHECK(renderText(addr).starts_with("0xc"));

  auto kind = [](rpc::GoKind k) { return static_cast<uint64_t>(k); };
  rpc::Variable m;  // a map past the depth: entries counted, none loaded
  m.kind = kind(rpc::GoKind::Map);
  m.type = "map[string]int";
  m.addr = 0xc000020000;
  m.base = 0xc000030000;
  m.len = 3;
  Value mv = valueFromDelve(m);
  CHECK(renderText(mv) == "map[string]int{len=3: …}");
  CHECK(jsonText(renderJson(mv)) == "{\"cut\":true,\"type\":\"map[string]int\",\"addr\":\"0xc000020000\",\"len\":3}");
  m.len = 0;  // an empty map is loaded, not cut
  CHECK(jsonText(renderJson(valueFromDelve(m))) == "{}");

  rpc::Variable s;  // a string in an interface past the depth: OnlyAddr, no value
  s.kind = kind(rpc::GoKind::String);
  s.type = "string";
  s.onlyAddr = true;
  s.addr = 0x4ca000;
  CHECK(renderText(valueFromDelve(s)) == "{…}");
  CHECK(jsonText(renderJson(valueFromDelve(s))) == "{\"cut\":true,\"type\":\"string\",\"addr\":\"0x4ca000\"}");

  rpc::Variable p;  // a pointer never loaded, at a real address: cut
  p.kind = kind(rpc::GoKind::Pointer);
  p.type = "*net.TCPConn";
  p.addr = 0xc000040008;
  CHECK(renderText(valueFromDelve(p)) == "{…}");
  p.addr = 0;  // at address 0 there is nothing to load: nil
  CHECK(renderText(valueFromDelve(p)) == "nil");
  CHECK(jsonText(renderJson(valueFromDelve(p))) == "null");

  rpc::Variable i;  // an interface never loaded
  i.kind = kind(rpc::GoKind::Interface);
  i.type = "net.Conn";
  i.addr = 0xc000040000;
  CHECK(renderText(valueFromDelve(i)) == "{…}");
  i.addr = 0;
  CHECK(renderText(valueFromDelve(i)) == "nil");

  rpc::Variable sl;  // a slice in an interface past the depth: header known, elements not
  sl.kind = kind(rpc::GoKind::Slice);
  sl.type = "[]uint8";
  sl.onlyAddr = true;
  sl.len = 3;
  sl.cap = 8;
  CHECK(renderText(valueFromDelve(sl)) == "[]uint8{len=3 cap=8: <past Delve's load depth>}");
  CHECK(jsonText(renderJson(valueFromDelve(sl))) == "{\"len\":3,\"cap\":8}");
}

TEST_CASE("delve values: Go string quoting") {
  // One quoting for both paths (value/go_quote.hpp).
  CHECK(quoteGo("a\"b\\c\n\t\x01") == "\"a\\\"b\\\\c\\n\\t\\x01\"");
  CHECK(quoteGo("héllo") == "\"héllo\"");
}

TEST_CASE("delve: the Go version guard on GetVersion") {
  rpc::GetVersionOut v;
  v.delveVersion = "Version: 1.20.2\nBuild: $Id: e0c278ad8e0126a312b553b8e171e81bcbd37f60 $";
  v.minSupportedVersionOfGo = "1.18.0";
  v.maxSupportedVersionOfGo = "1.20.0";
  v.targetGoVersion = "Go cmd/compile go1.19.8; regabi";
  CHECK_FALSE(goVersionRefusal(7, v));
  v.targetGoVersion = "Go cmd/compile go1.20";
  CHECK_FALSE(goVersionRefusal(7, v));
  v.targetGoVersion = "Go cmd/compile go1.22.5; regabi";
  auto newer = goVersionRefusal(7, v);
  REQUIRE(newer);
  CHECK(newer->kind == ErrorKind::BadTarget);
  CHECK(newer->message == "PID 7 was built by go1.22.5, outside what the installed Delve 1.20.2 supports (Go 1.18 to 1.20)");
  CHECK(newer->hint.find("BPF") != std::string::npos);
  v.targetGoVersion = "Go cmd/compile go1.17.13";
  CHECK(goVersionRefusal(7, v));
  v.targetGoVersion = "";  // no producer (not Go's compiler): Delve's own rule, no refusal
  CHECK_FALSE(goVersionRefusal(7, v));
}

TEST_CASE("json text: doubles in plain decimal, everything else as Boost writes it") {
  boost::json::value v = boost::json::object{{"a", 0.75},
                                             {"b", 3.0},
                                             {"c", "x\"y"},
                                             {"d", boost::json::array{1, -2, nullptr, true}},
                                             {"e", 1e300},
                                             {"f", std::numeric_limits<double>::quiet_NaN()}};
  CHECK(jsonText(v) == "{\"a\":0.75,\"b\":3,\"c\":\"x\\\"y\",\"d\":[1,-2,null,true],\"e\":1E300,\"f\":null}");
}
