// appendText / appendJson (trace's hot path, value/render.hpp) give the very
// bytes renderText / jsonText(renderJson) give, for every kind and corner a
// value has: trace's output format must not move by a byte (issue #14).
#include <doctest/doctest.h>

#include <limits>

#include "output/call_parts.hpp"
#include "util/json_text.hpp"
#include "value/render.hpp"

using namespace goscope;
using K = Value::Kind;

namespace {

Value make(K kind, std::string type = {}) {
  Value v;
  v.kind = kind;
  v.type = std::move(type);
  return v;
}

Value named(Value v, std::string name) {
  v.name = std::move(name);
  return v;
}

Value integer(int64_t i) {
  Value v = make(K::Int, "int");
  v.i = i;
  return v;
}

Value str(std::string text, uint64_t len) {
  Value v = make(K::String, "string");
  v.text = std::move(text);
  v.len = len;
  return v;
}

std::vector<Value> corpus() {
  std::vector<Value> vs;
  vs.push_back(integer(0));
  vs.push_back(integer(-42));
  vs.push_back(integer(std::numeric_limits<int64_t>::min()));
  Value u = make(K::Uint, "uint64");
  u.u = std::numeric_limits<uint64_t>::max();
  vs.push_back(u);
  Value uptr = make(K::Uint, "uintptr");
  uptr.u = 0x4a5f20;
  vs.push_back(uptr);
  Value b = make(K::Bool, "bool");
  b.boolean = true;
  vs.push_back(b);
  vs.push_back(make(K::Bool, "bool"));
  vs.push_back(str("alpha", 5));
  vs.push_back(str("", 0));
  vs.push_back(str("abc", 90));                   // truncated at the cap
  vs.push_back(str("h\xC3\xA9", 90));              // truncated, not plain ASCII
  vs.push_back(str("say \"hi\"\\n", 10));        // quotes and backslashes
  vs.push_back(str("tab\there\nnl", 11));        // control characters
  vs.push_back(str("h\xC3\xA9llo \xE2\x82\xAC", 10));  // valid UTF-8
  vs.push_back(str("bad \xFF\xFE end", 10));      // invalid UTF-8
  vs.push_back(str("del \x7F", 5));
  Value f = make(K::Float, "float64");
  f.f = 2.5;
  vs.push_back(f);
  f.f = 1e300;
  vs.push_back(f);
  Value c = make(K::Complex, "complex128");
  c.f = 1, c.imag = -2;
  vs.push_back(c);
  vs.push_back(Value::missing("unavailable: float in X0"));
  vs.push_back(Value::missing("not captured"));
  Value p = make(K::Pointer, "*main.Server");
  p.nil = true;
  vs.push_back(p);
  p.nil = false;
  p.address = 0xc000012345;
  vs.push_back(p);
  Value s = make(K::Struct, "main.Server");
  s.children = {named(str("api", 3), "Name"), named(integer(8080), "Port")};
  p.children = {s};
  vs.push_back(p);
  vs.push_back(s);
  Value anon = s;
  anon.type = "struct { a int }";
  vs.push_back(anon);
  Value blanks = make(K::Struct, "main.Padded");
  blanks.children = {named(integer(1), "_"), named(integer(2), "x"), named(integer(3), "_")};
  vs.push_back(blanks);
  Value elidedStruct = s;
  elidedStruct.elided = true;
  elidedStruct.address = 0xc0000a0000;
  vs.push_back(elidedStruct);
  Value up = make(K::UnsafePointer, "unsafe.Pointer");
  up.address = 0x1234;
  vs.push_back(up);
  up.nil = true;
  up.address = 0;
  vs.push_back(up);
  Value arr = make(K::Array, "[3]int");
  arr.len = 3;
  arr.children = {integer(1), integer(2), integer(3)};
  vs.push_back(arr);
  arr.len = 64;  // 3 shown of 64: cut
  vs.push_back(arr);
  Value sl = make(K::Slice, "[]int");
  sl.nil = true;
  vs.push_back(sl);
  sl.nil = false;
  sl.address = 0xc0000b0000;
  vs.push_back(sl);  // len 0
  sl.len = 10, sl.cap = 16;
  sl.children = {integer(1), integer(2)};
  vs.push_back(sl);  // more elements than shown
  Value slu = sl;
  slu.children.clear();
  slu.elementsUnavailable = "unreadable: EFAULT";
  vs.push_back(slu);
  Value sle = sl;
  sle.children.clear();
  sle.elided = true;
  vs.push_back(sle);
  Value m = make(K::Map, "map[string]int");
  m.len = 2;
  m.children = {str("a", 1), integer(1), str("b", 1), integer(2)};
  vs.push_back(m);
  m.len = 70;  // 2 shown of 70: cut
  vs.push_back(m);
  Value i = make(K::Interface, "error");
  i.dynamicType = "*errors.errorString";
  i.address = 0xc000010250;
  i.errorText = "not found";
  vs.push_back(i);
  i.errorTextMissing = 12;  // the message cut at the cap
  vs.push_back(i);
  Value ch = make(K::Chan, "chan int");
  ch.len = 1, ch.cap = 4;
  vs.push_back(ch);
  Value fn = make(K::Func, "func()");
  fn.text = "main.handler";
  vs.push_back(fn);
  Value cut = Value::missing("");
  cut.elided = true;
  cut.type = "main.node";
  vs.push_back(cut);
  return vs;
}

}  // namespace

TEST_CASE("value append: appendText and appendJson give renderText's and jsonText(renderJson)'s bytes") {
  for (const Value& v : corpus()) {
    const std::string text = renderText(v), json = jsonText(renderJson(v));
    CAPTURE(text);
    std::string t = "prefix ", j = "prefix ";
    appendText(v, t);
    appendJson(v, j);
    CHECK(t == "prefix " + text);
    CHECK(j == "prefix " + json);
  }
  for (const char* s : {"main.add", "a \"quoted\" name", "tab\t", "\xC3\xA9"}) {
    std::string out;
    appendJsonString(s, out);
    CHECK(out == boost::json::serialize(boost::json::string_view(s)));
  }
}

TEST_CASE("value append: a call's argument and result lists, as trace's lines print them") {
  auto vs = corpus();
  for (auto& v : vs) v.name = "v";
  std::vector<Value> results = {named(integer(55), "~r0"), named(integer(-1), "err")};
  for (const auto* list : {&vs, &results}) {
    for (bool res : {false, true}) {
      std::string out;
      output::appendAssignments(*list, ", ", out, res);
      CHECK(out == output::assignments(*list, ", ", res));
    }
    std::string named, array;
    output::appendNamedJson(*list, named);
    output::appendValueArray(*list, array);
    CHECK(named == jsonText(output::namedJson(*list)));  // "v" repeated: Boost keeps one key
    CHECK(array == jsonText(output::valueArray(*list)));
  }
}

TEST_CASE("value append: a uintptr prints in hex, JSON keeps the number") {
  Value v = make(K::Uint, "uintptr");
  v.u = 0x4a5f20;
  CHECK(renderText(v) == "0x4a5f20");
  CHECK(jsonText(renderJson(v)) == "4874016");
  std::string text, json;
  appendText(v, text);
  appendJson(v, json);
  CHECK(text == "0x4a5f20");
  CHECK(json == "4874016");
  v.type = "uint64";
  CHECK(renderText(v) == "4874016");  // other unsigned kinds stay decimal
}

TEST_CASE("value append: argument words by position, grouped as Go's traceback groups them") {
  auto word = [](uint64_t u) {
    Value v = make(K::Uint, "uintptr");
    v.u = u;
    return v;
  };
  Value inner = make(K::Group);
  inner.children = {word(0x4b2c10), word(2)};
  Value outer = make(K::Group);
  outer.children = {word(0x2a), inner};
  Value cut = make(K::Group);
  cut.children = {word(1)};
  cut.more = true;
  Value depth = make(K::Group);
  depth.more = true;
  std::vector<Value> args = {outer, word(3), cut, depth, Value::missing("unplaced")};
  std::string text, json;
  output::appendPositional(args, true, text);
  output::appendPositionalJson(args, true, json);
  CHECK(text == "{0x2a, {0x4b2c10, 0x2}}, 0x3, {0x1, ...}, {...}, <unplaced>, ...");
  CHECK(json == R"([[42,[4926480,2]],3,[1,"..."],["..."],null,"..."])");
  CHECK(json == jsonText(output::positionalJson(args, true)));
  // A typed receiver among the words keeps its name in text.
  Value recv = word(0xc000);
  recv.name = "recv";
  std::string named;
  output::appendPositional({recv, word(7)}, false, named);
  CHECK(named == "recv=0xc000, 0x7");
  std::string none;
  output::appendPositional({}, false, none);
  CHECK(none.empty());
  output::appendPositionalJson({}, true, none);
  CHECK(none == R"(["..."])");
}
