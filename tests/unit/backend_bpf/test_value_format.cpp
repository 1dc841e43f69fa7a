// Capture plans and the decoding of hand-built events into text and JSON.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>

#include "backend/bpf/value_decode.hpp"
#include "backend/bpf/capture_plan.hpp"
#include "value/render.hpp"

using namespace goscope;
using bpf::MemRead;
using bpf::Reg;
using K = GoType::Kind;

namespace {

// An event as the engine would deliver it, with its blocks' bytes kept alive.
struct EventBuilder {
  bpf::Event e;
  std::deque<std::vector<uint8_t>> storage;

  EventBuilder& reg(Reg r, uint64_t v) {
    e.regs[static_cast<unsigned>(r)] = v;
    return *this;
  }
  EventBuilder& block(std::vector<uint8_t> bytes, uint32_t fullLen = 0, int err = 0) {
    storage.push_back(std::move(bytes));
    bpf::CapturedBlock b;
    b.bytes = storage.back();
    b.fullLen = fullLen ? fullLen : static_cast<uint32_t>(storage.back().size());
    b.errnoValue = err;
    e.blocks.push_back(b);
    return *this;
  }
  EventBuilder& text(std::string_view s, uint32_t fullLen = 0) { return block({s.begin(), s.end()}, fullLen); }
  EventBuilder& words(std::vector<uint64_t> ws) {
    std::vector<uint8_t> b(ws.size() * 8);
    std::memcpy(b.data(), ws.data(), b.size());
    return block(std::move(b));
  }
};

struct Traced {
  std::vector<ValueLayout> layout;
  CapturePlan plan;
};

Traced fromSig(std::string_view sig, CaptureOptions o = {}) {
  auto l = layoutFromSignature(sig);
  REQUIRE_MESSAGE(l, (l ? "" : l.error().message));
  auto p = planCaptures(*l, o);
  REQUIRE(p);
  return {std::move(*l), std::move(*p)};
}

// Struct types for the tests that need DWARF-like descriptions.
struct Types {
  std::map<std::string, GoType, std::less<>> table;
  Types() {
    for (auto [n, k, s] : std::initializer_list<std::tuple<const char*, K, uint64_t>>{
             {"int", K::Int, 8}, {"int64", K::Int64, 8}, {"float64", K::Float64, 8}, {"string", K::String, 16}})
      table[n] = GoType{n, s, k};
    table["main.Record"] = GoType{"main.Record", 32, K::Struct, {{"X", 0, "int64"}, {"Y", 8, "int64"}, {"Name", 16, "string"}}};
    table["main.Server"] = GoType{"main.Server", 24, K::Struct, {{"Name", 0, "string"}, {"Port", 16, "int"}}};
    table["*main.Server"] = GoType{"*main.Server", 8, K::Pointer, {}, "main.Server"};
    table["main.Request"] = GoType{"main.Request", 24, K::Struct, {{"Path", 0, "string"}, {"ID", 16, "int"}}};
    table["main.Point"] = GoType{"main.Point", 16, K::Struct, {{"X", 0, "float64"}, {"Y", 8, "float64"}}};
  }
  Traced trace(std::string name, std::vector<std::tuple<std::string, std::string, bool>> params, CaptureOptions o = {}) {
    DwarfFunction f;
    f.name = std::move(name);
    for (auto& [n, t, r] : params) {
      DwarfParam p;
      p.name = n;
      p.type = t;
      p.isResult = r;
      f.params.push_back(p);
    }
    auto l = layoutFunction(f, [this](std::string_view n) -> const GoType* {
      auto it = table.find(n);
      return it == table.end() ? nullptr : &it->second;
    });
    REQUIRE(l);
    auto p = planCaptures(*l, o);
    REQUIRE(p);
    return {std::move(*l), std::move(*p)};
  }
};

std::string texts(const std::vector<DecodedValue>& vs) {
  std::string s;
  for (const auto& v : vs) s += (s.empty() ? "" : ", ") + v.name + "=" + v.text;
  return s;
}

std::string jsons(const std::vector<DecodedValue>& vs) {
  boost::json::object o;
  for (const auto& v : vs) o[v.name] = v.json;
  return boost::json::serialize(o);
}

const TypeNamer kNoNames;

std::string jstr(const boost::json::value& v) { return v.is_string() ? std::string(v.as_string()) : "<not a string>"; }

}  // namespace

TEST_CASE("value format: add(x=42, y=13) = 55") {
  auto t = fromSig("main.add(x int, y int) int");
  CHECK(t.plan.entryReads.empty());
  CHECK(t.plan.returnReads.empty());
  EventBuilder in;
  in.reg(Reg::RAX, 42).reg(Reg::RBX, 13);
  auto args = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(texts(args) == "x=42, y=13");
  CHECK(jsons(args) == R"({"x":42,"y":13})");
  EventBuilder out;
  out.e.site = bpf::SiteKind::Return;
  out.reg(Reg::RAX, 55).reg(Reg::RBX, 999);
  auto res = decodeResults(out.e, t.layout, t.plan, kNoNames);
  CHECK(texts(res) == "~r0=55");
  CHECK(jsons(res) == R"({"~r0":55})");
}

TEST_CASE("value format: integer widths, signs, bool — uint64 above 2^53 stays exact in JSON") {
  auto t = fromSig("main.f(a int8, b int32, c uint64, d bool, e uintptr, f uint16)");
  EventBuilder in;
  // Registers carry garbage above the value's width: it must be ignored.
  in.reg(Reg::RAX, 0xdeadbeef000000ffULL)
      .reg(Reg::RBX, 0x12345678fffffffeULL)
      .reg(Reg::RCX, (1ULL << 63) + 1)
      .reg(Reg::RDI, 0xff00000000000001ULL)
      .reg(Reg::RSI, 16)
      .reg(Reg::R8, 0xffff0000ffffULL);
  auto args = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(texts(args) == "a=-1, b=-2, c=9223372036854775809, d=true, e=0x10, f=65535");  // a uintptr in hex
  CHECK(jsons(args) == R"({"a":-1,"b":-2,"c":9223372036854775809,"d":true,"e":16,"f":65535})");
}

TEST_CASE("value format: strings read exactly len bytes — truncation, failures and empty strings show") {
  auto t = fromSig("main.greet(name string) string", {.maxString = 64});
  REQUIRE(t.plan.entryReads.size() == 1);
  const MemRead& r = t.plan.entryReads[0];
  CHECK(r.base == Reg::RAX);
  CHECK(r.lenFrom == MemRead::LenFrom::Register);
  CHECK(r.lenReg == Reg::RBX);
  CHECK(r.maxLen == 64);

  EventBuilder in;
  in.reg(Reg::RAX, 0xc000010000).reg(Reg::RBX, 5).text("hello");
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "\"hello\"");
  CHECK(jstr(a[0].json) == "hello");

  EventBuilder trunc;
  trunc.reg(Reg::RAX, 0xc000010000).reg(Reg::RBX, 100).text(std::string(64, 'a'), 100);
  a = decodeArgs(trunc.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "\"" + std::string(64, 'a') + "…\"(+36 bytes)");
  // JSON: marked cut with its full length, never a string that reads as whole.
  REQUIRE(a[0].json.is_object());
  CHECK(a[0].json.as_object().at("cut") == true);
  CHECK(a[0].json.as_object().at("len") == 100);
  CHECK(jstr(a[0].json.as_object().at("value")) == std::string(64, 'a'));

  EventBuilder bad;
  bad.reg(Reg::RAX, 0x10).reg(Reg::RBX, 5).block({}, 5, EFAULT);
  a = decodeArgs(bad.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "<unreadable: EFAULT>");
  CHECK(a[0].json.is_null());

  EventBuilder empty;
  empty.reg(Reg::RAX, 0).reg(Reg::RBX, 0).block({}, 0);
  a = decodeArgs(empty.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "\"\"");
  CHECK(jstr(a[0].json) == "");

  EventBuilder odd;
  odd.reg(Reg::RAX, 0xc000010000).reg(Reg::RBX, 6).block({'a', '"', '\n', 0x01, 0xc3, 0xa9});
  a = decodeArgs(odd.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "\"a\\\"\\n\\x01é\"");
  CHECK(jstr(a[0].json) == "a\"\n\x01é");
}

TEST_CASE("value format: slices show length, capacity and the first elements") {
  auto t = fromSig("main.sum(xs []int) int", {.maxElems = 4});
  REQUIRE(t.plan.entryReads.size() == 1);
  CHECK(t.plan.entryReads[0].len == 8);      // element size
  CHECK(t.plan.entryReads[0].maxLen == 32);  // 4 elements
  EventBuilder in;
  in.reg(Reg::RAX, 0xc000020000).reg(Reg::RBX, 3).reg(Reg::RCX, 4).words({1, 2, 3});
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "[]int{len=3 cap=4: 1, 2, 3}");
  CHECK(boost::json::serialize(a[0].json) == R"({"len":3,"cap":4,"elems":[1,2,3]})");

  EventBuilder many;
  many.reg(Reg::RAX, 0xc000020000).reg(Reg::RBX, 10).reg(Reg::RCX, 10).words({1, 2, 3, 4});
  CHECK(decodeArgs(many.e, t.layout, t.plan, kNoNames)[0].text == "[]int{len=10 cap=10: 1, 2, 3, 4, …}");

  EventBuilder nil;
  nil.block({}, 0);
  a = decodeArgs(nil.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "[]int(nil)");
  CHECK(a[0].json.is_null());
}

TEST_CASE("value format: floats are unavailable, never a wrong value") {
  auto t = fromSig("main.scale(v float64, k int) float64");
  EventBuilder in;
  in.reg(Reg::RAX, 4);
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(texts(a) == "v=<unavailable: float in X0>, k=4");
  CHECK(jsons(a) == R"({"v":null,"k":4})");
  Types types;
  auto p = types.trace("main.Point.Dist", {{"p", "main.Point", false}});
  CHECK(texts(decodeArgs(in.e, p.layout, p.plan, kNoNames)) ==
        "p=main.Point{X: <unavailable: float in X0>, Y: <unavailable: float in X1>}");
}

TEST_CASE("value format: floats in memory (stack, pointees, elements) are readable") {
  auto t = fromSig("main.f(a [2]float64, c complex64)");
  REQUIRE(t.plan.entryReads.size() == 1);  // a on the stack; c in X0, X1
  EventBuilder in;
  double ds[2] = {1.5, -2};
  std::vector<uint8_t> b(16);
  std::memcpy(b.data(), ds, 16);
  in.block(b);
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(texts(a) == "a=[2]float64{1.5, -2}, c=<unavailable: float in X0>");
  CHECK(jsons(a) == R"({"a":[1.5E0,-2E0],"c":null})");
}

TEST_CASE("value format: an error's dynamic type through its itab, and its message") {
  auto t = fromSig("main.parse(s string) (int, error)");
  // At the RET: the itab's _type (itab+8), then the message behind the data pointer.
  REQUIRE(t.plan.returnReads.size() == 2);
  CHECK(t.plan.returnReads[0].base == Reg::RBX);
  CHECK(t.plan.returnReads[0].offset == 8);
  CHECK(t.plan.returnReads[0].len == 8);
  CHECK(t.plan.returnReads[1].base == Reg::RCX);
  CHECK(t.plan.returnReads[1].deref);
  CHECK(t.plan.returnReads[1].lenFrom == MemRead::LenFrom::Memory);

  TypeNamer names = TypeNamer::fromNames({{0x4a1000, "*errors.errorString"}});
  EventBuilder out;
  out.e.site = bpf::SiteKind::Return;
  out.reg(Reg::RAX, 0).reg(Reg::RBX, 0x4c0000).reg(Reg::RCX, 0xc000010250).words({0x4a1000}).text("not found");
  auto r = decodeResults(out.e, t.layout, t.plan, names);
  CHECK(texts(r) == "~r0=0, ~r1=error(*errors.errorString)0xc000010250 \"not found\"");
  CHECK(jsons(r) == R"({"~r0":0,"~r1":{"type":"*errors.errorString","value":"0xc000010250","error":"not found"}})");

  // An unknown dynamic type: its address; no message guessed from the data.
  EventBuilder other;
  other.reg(Reg::RBX, 0x4c0000).reg(Reg::RCX, 0xc000010250).words({0x4a2000}).text("junk");
  r = decodeResults(other.e, t.layout, t.plan, names);
  CHECK(r[1].text == "error(type@0x4a2000)0xc000010250");

  EventBuilder nil;
  nil.reg(Reg::RAX, 42).block({}, 8, EFAULT).block({}, 0, EFAULT);
  r = decodeResults(nil.e, t.layout, t.plan, names);
  CHECK(texts(r) == "~r0=42, ~r1=nil");
  CHECK(jsons(r) == R"({"~r0":42,"~r1":null})");
}

TEST_CASE("value format: an empty interface's type word is the type — PIE addresses lose the load bias") {
  auto t = fromSig("main.f(a any)");
  CHECK(t.plan.entryReads.empty());
  TypeNamer names = TypeNamer::fromNames({{0x4b0000, "int"}});
  names.setLoadBias(0x7f0000000000);
  EventBuilder in;
  in.reg(Reg::RAX, 0x7f00004b0000).reg(Reg::RBX, 0xc000012345);
  auto a = decodeArgs(in.e, t.layout, t.plan, names);
  CHECK(a[0].text == "any(int)0xc000012345");
  CHECK(boost::json::serialize(a[0].json) == R"({"type":"int","value":"0xc000012345"})");
}

TEST_CASE("value format: structs by value, pointers to structs") {
  Types types;
  auto t = types.trace("main.checkRecord", {{"r", "main.Record", false}});
  REQUIRE(t.plan.entryReads.size() == 1);  // Name's bytes, from RCX (ptr) and RDI (len)
  EventBuilder in;
  in.reg(Reg::RAX, 6).reg(Reg::RBX, 7).reg(Reg::RCX, 0x4d0000).reg(Reg::RDI, 3).text("zoo");
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(a[0].text == "main.Record{X: 6, Y: 7, Name: \"zoo\"}");
  CHECK(boost::json::serialize(a[0].json) == R"({"X":6,"Y":7,"Name":"zoo"})");

  auto h = types.trace("main.(*Server).Handle", {{"s", "*main.Server", false}, {"req", "main.Request", false}});
  // Needed first (req.Path), then the extras: *s, then s.Name through RAX.
  REQUIRE(h.plan.entryReads.size() == 3);
  CHECK(h.plan.entryReads[1].base == Reg::RAX);
  CHECK(h.plan.entryReads[1].len == 24);
  CHECK(h.plan.entryReads[2].deref);
  EventBuilder call;
  call.reg(Reg::RAX, 0xc000010000).reg(Reg::RBX, 0x4d1000).reg(Reg::RCX, 6).reg(Reg::RDI, 7);
  call.text("/users").words({0x4d2000, 3, 8080}).text("api");
  a = decodeArgs(call.e, h.layout, h.plan, kNoNames);
  CHECK(texts(a) == "s=&main.Server{Name: \"api\", Port: 8080}, req=main.Request{Path: \"/users\", ID: 7}");
  CHECK(jsons(a) == R"({"s":{"addr":"0xc000010000","value":{"Name":"api","Port":8080}},"req":{"Path":"/users","ID":7}})");

  // Without the extras: the address only.
  auto bare = types.trace("main.(*Server).Handle", {{"s", "*main.Server", false}}, {.derefPointers = false});
  CHECK(bare.plan.entryReads.empty());
  EventBuilder call2;
  call2.reg(Reg::RAX, 0xc000010000);
  a = decodeArgs(call2.e, bare.layout, bare.plan, kNoNames);
  CHECK(a[0].text == "0xc000010000");
  CHECK(jstr(a[0].json) == "0xc000010000");
  EventBuilder nil;
  CHECK(decodeArgs(nil.e, bare.layout, bare.plan, kNoNames)[0].text == "nil");
}

TEST_CASE("value format: stack-passed values are read from RSP+offset") {
  auto t = fromSig("main.ten(a, b, c, d, e, f, g, h, i, j int, s [2]int32)");
  // j at RSP+8 and s at RSP+16, next to each other: one read of 16 bytes.
  REQUIRE(t.plan.entryReads.size() == 1);
  CHECK(t.plan.entryReads[0].base == Reg::RSP);
  CHECK(t.plan.entryReads[0].offset == 8);
  CHECK(t.plan.entryReads[0].len == 16);
  EventBuilder in;
  for (unsigned i = 0; i < 9; i++) in.reg(static_cast<Reg>(i), i + 1);
  in.block({10, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 5, 0, 0, 0});
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(texts(a) == "a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9, j=10, s=[2]int32{-2, 5}");
  CHECK(jsons(a).ends_with(R"("j":10,"s":[-2,5]})"));
}

TEST_CASE("value format: more reads than the engine allows: the rest print as <not captured>, in argument order") {
  // a..d in registers (4 string reads), e..i on the stack: their headers in
  // one read, then a read for each one's bytes: e, f and g fit in the 8
  // reads, h's and i's bytes do not (their lengths, in the headers, do).
  auto t = fromSig("main.many(a, b, c, d, e, f, g, h, i string)");
  CHECK(t.plan.entryReads.size() == GS_MAX_STEPS);
  CHECK(t.plan.incomplete == 2);
  CHECK(t.plan.values[6].complete);
  CHECK_FALSE(t.plan.values[7].complete);
  EventBuilder in;
  const char* letters = "abcd";
  for (unsigned i = 0; i < 4; i++) {
    in.reg(static_cast<Reg>(2 * i), 0x4e0000 + i).reg(static_cast<Reg>(2 * i + 1), 1);
    in.text(std::string(1, letters[i]));
  }
  in.words({0x4e1000, 1, 0x4e2000, 1, 0x4e3000, 1, 0x4e4000, 1, 0x4e5000, 1}).text("e").text("f").text("g");
  auto a = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  CHECK(texts(a) == "a=\"a\", b=\"b\", c=\"c\", d=\"d\", e=\"e\", f=\"f\", g=\"g\", h=<not captured: 1 bytes>, i=<not captured: 1 bytes>");
  CHECK(jsons(a).ends_with(R"("g":"g","h":null,"i":null})"));
}

TEST_CASE("value format: values without a known place say why") {
  std::vector<ValueLayout> l(1);
  l[0].name = "x";
  l[0].problem = "DWARF omits a parameter";
  CapturePlan plan;
  plan.values.resize(1);
  EventBuilder in;
  auto a = decodeArgs(in.e, l, plan, kNoNames);
  CHECK(a[0].text == "<unknown: DWARF omits a parameter>");
  CHECK(a[0].json.is_null());
}

TEST_CASE("value format: a value past the decoder's depth prints as cut on every path, never as nil") {
  // What value_decode.cpp builds past kMaxDepth: nothing read, the type known.
  Value v = Value::missing("");
  v.elided = true;
  v.type = "*main.Node";
  CHECK(renderText(v) == "{…}");
  auto j = renderJson(v);
  REQUIRE(j.is_object());  // was: null, which says nil
  CHECK(j.as_object().at("cut").as_bool());
  CHECK(j.as_object().at("type").as_string() == "*main.Node");
  // A value that is simply unavailable keeps its reason and its null.
  Value u = Value::missing("float in X0");
  CHECK(renderText(u) == "<float in X0>");
  CHECK(renderJson(u).is_null());
}

TEST_CASE("value format: what was read in part is marked cut in JSON, with its full length") {
  auto str = [](std::string text, uint64_t len) {
    Value v;
    v.kind = Value::Kind::String;
    v.type = "string";
    v.text = std::move(text);
    v.len = len;
    return v;
  };
  auto num = [](int64_t i) {
    Value v;
    v.kind = Value::Kind::Int;
    v.type = "int";
    v.i = i;
    return v;
  };
  auto json = [](const Value& v) { return boost::json::serialize(renderJson(v)); };
  CHECK(json(str("abc", 3)) == R"("abc")");  // whole: a plain string
  CHECK(json(str("abc", 93)) == R"({"cut":true,"type":"string","len":93,"value":"abc"})");

  Value sl;
  sl.kind = Value::Kind::Slice;
  sl.type = "[]int";
  sl.address = 0xc000010000;
  sl.len = 3, sl.cap = 4;
  sl.children = {num(1), num(2), num(3)};
  CHECK(json(sl) == R"({"len":3,"cap":4,"elems":[1,2,3]})");
  sl.len = 10;
  CHECK(json(sl) == R"({"len":10,"cap":4,"elems":[1,2,3],"cut":true})");
  CHECK(renderText(sl) == "[]int{len=10 cap=4: 1, 2, 3, …}");
  Value unread = sl;
  unread.children.clear();
  unread.elementsUnavailable = "unreadable: EFAULT";
  CHECK(json(unread) == R"({"len":10,"cap":4,"elems_unavailable":"unreadable: EFAULT"})");

  Value arr;
  arr.kind = Value::Kind::Array;
  arr.type = "[64]uint8";
  arr.len = 64;
  arr.children = {num(7), num(8)};
  CHECK(json(arr) == R"({"cut":true,"type":"[64]uint8","len":64,"elems":[7,8]})");
  arr.len = 2;
  CHECK(json(arr) == "[7,8]");

  Value m;
  m.kind = Value::Kind::Map;
  m.type = "map[string]int";
  m.address = 0xc000020000;
  m.len = 100;
  m.children = {str("a", 1), num(1)};
  CHECK(json(m) == R"({"cut":true,"type":"map[string]int","len":100,"elems":{"a":1}})");
  m.len = 1;
  CHECK(json(m) == R"({"a":1})");

  Value e;
  e.kind = Value::Kind::Interface;
  e.type = "error";
  e.dynamicType = "*errors.errorString";
  e.address = 0xc000030000;
  e.errorText = "not f";
  e.errorTextMissing = 4;
  CHECK(json(e) == R"({"type":"*errors.errorString","value":"0xc000030000","error":"not f","error_cut":true,"error_len":9})");

  // A dynamic type with no name is null with the reason beside it, never a bare null.
  Value u;
  u.kind = Value::Kind::Interface;
  u.type = "any";
  u.address = 0xc000040000;
  u.text = "type@0x55cb8359fc90";
  CHECK(json(u) == R"({"type":null,"type_unknown":"type@0x55cb8359fc90","value":"0xc000040000"})");
  CHECK(renderText(u) == "any(type@0x55cb8359fc90)0xc000040000");
  u.text.clear();
  CHECK(json(u) == R"({"type":null,"type_unknown":"unnamed","value":"0xc000040000"})");
}

TEST_CASE("capture plan: options out of range are refused") {
  auto l = layoutFromSignature("main.f(s string)");
  REQUIRE(l);
  CHECK_FALSE(planCaptures(*l, {.maxString = 0}));
  CHECK_FALSE(planCaptures(*l, {.maxString = 257}));
  CHECK(planCaptures(*l, {.maxString = 256}));
}

TEST_CASE("value format: values next to each other on the stack share one read") {
  // Nine integers fill RAX..R11; the next three are on the stack at RSP+8,
  // +16, +24, and a [2]int64 array (always on the stack) after them.
  auto t = fromSig("main.many(a0 int, a1 int, a2 int, a3 int, a4 int, a5 int, a6 int, a7 int, a8 int, "
                   "s0 int, s1 int, s2 int, arr [2]int64, tail string)");
  // One read for the five stack values (three ints, the array, the string's
  // header: 56 bytes from RSP+8), one for the string's bytes: two reads,
  // not six.
  REQUIRE(t.plan.entryReads.size() == 2);
  CHECK(t.plan.entryReads[0].base == Reg::RSP);
  CHECK(t.plan.entryReads[0].offset == 8);
  CHECK(t.plan.entryReads[0].len == 56);
  EventBuilder in;
  const Reg regs[] = {Reg::RAX, Reg::RBX, Reg::RCX, Reg::RDI, Reg::RSI, Reg::R8, Reg::R9, Reg::R10, Reg::R11};
  for (int i = 0; i < 9; i++) in.reg(regs[i], static_cast<uint64_t>(i));
  in.words({100, 101, 102, 7, 8, 0xc000, 2});
  in.text("hi");
  auto args = decodeArgs(in.e, t.layout, t.plan, kNoNames);
  const std::string text = texts(args);
  CHECK(text.find("a8=8, s0=100, s1=101, s2=102, arr=[2]int64{7, 8}, tail=\"hi\"") != std::string::npos);
}
