// The Go ABIInternal assignment (abi-internal.md) on hand-built types: which
// register or stack slot each argument and result takes.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "probe/abi_layout.hpp"

using namespace goscope;
using K = GoType::Kind;

namespace {

// A hand-made type table standing in for DWARF.
struct Types {
  std::map<std::string, GoType, std::less<>> table;

  Types() {
    // As DWARF describes them: string, slices and interfaces as structs.
    add("int", K::Int, 8);
    add("int64", K::Int64, 8);
    add("int32", K::Int32, 4);
    add("int8", K::Int8, 1);
    add("uint8", K::Uint8, 1);
    add("float64", K::Float64, 8);
    add("float32", K::Float32, 4);
    add("complex128", K::Complex128, 16);
    add("string", K::String, 16);
    GoType err{"error", 16, K::Interface, {{"tab", 0, "*runtime.itab"}, {"data", 8, "unsafe.Pointer"}}};
    table["error"] = err;
    GoType ifc{"interface {}", 16, K::Interface, {{"_type", 0, "*runtime._type"}, {"data", 8, "unsafe.Pointer"}}};
    table["interface {}"] = ifc;
    GoType sl{"[]int", 24, K::Slice, {{"array", 0, "*int"}, {"len", 8, "int"}, {"cap", 16, "int"}}, "int"};
    table["[]int"] = sl;
  }
  void add(std::string name, K kind, uint64_t size) {
    GoType t;
    t.name = name;
    t.kind = kind;
    t.size = size;
    table[name] = t;
  }
  void addStruct(std::string name, uint64_t size, std::vector<GoType::Field> fields) {
    GoType t;
    t.name = name;
    t.kind = K::Struct;
    t.size = size;
    t.fields = std::move(fields);
    table[name] = t;
  }
  void addArray(std::string name, std::string elem, uint64_t count, uint64_t size) {
    GoType t;
    t.name = name;
    t.kind = K::Array;
    t.elem = elem;
    t.count = count;
    t.size = size;
    table[name] = t;
  }
  TypeLookup lookup() const {
    return [this](std::string_view n) -> const GoType* {
      auto it = table.find(n);
      return it == table.end() ? nullptr : &it->second;
    };
  }
};

DwarfFunction fn(std::string name, std::vector<std::tuple<std::string, std::string, bool>> params) {
  DwarfFunction f;
  f.name = std::move(name);
  for (auto& [n, t, r] : params) {
    DwarfParam p;
    p.name = n;
    p.type = t;
    p.isResult = r;
    f.params.push_back(p);
  }
  return f;
}

std::string describeAll(const std::vector<ValueLayout>& l) {
  std::string s;
  for (const auto& v : l) s += (s.empty() ? "" : "; ") + describeLayout(v);
  return s;
}

std::string layoutOf(const Types& types, const DwarfFunction& f, std::optional<int32_t> args = std::nullopt) {
  auto l = layoutFunction(f, types.lookup(), args);
  REQUIRE(l);
  return describeAll(*l);
}

}  // namespace

TEST_CASE("abi layout: add(x, y int) int") {
  Types t;
  auto f = fn("main.add", {{"x", "int", false}, {"y", "int", false}, {"~r0", "int", true}});
  auto l = layoutFunction(f, t.lookup());
  REQUIRE(l);
  REQUIRE(l->size() == 3);
  CHECK((*l)[0].parts == std::vector<ValuePart>{{ValuePart::IntReg, 0, 0, 8, "", K::Int, 0}});
  CHECK((*l)[1].parts == std::vector<ValuePart>{{ValuePart::IntReg, 1, 0, 8, "", K::Int, 0}});
  CHECK((*l)[2].isResult);
  CHECK((*l)[2].parts == std::vector<ValuePart>{{ValuePart::IntReg, 0, 0, 8, "", K::Int, 0}});
  CHECK(describeAll(*l) == "x int: RAX; y int: RBX; ~r0 int: RAX");
}

TEST_CASE("abi layout: a struct by value is flattened field by field (field notes: RAX, RBX, RCX, RDI)") {
  Types t;
  t.addStruct("main.Record", 32, {{"X", 0, "int64"}, {"Y", 8, "int64"}, {"Name", 16, "string"}});
  auto f = fn("main.checkRecord", {{"r", "main.Record", false}, {"~r0", "int64", true}});
  auto l = layoutFunction(f, t.lookup());
  REQUIRE(l);
  CHECK(describeAll(*l) == "r main.Record: RAX(.X) RBX(.Y) RCX(.Name.ptr) RDI(.Name.len); ~r0 int64: RAX");
  // In-memory offsets let the decoder rebuild the value.
  CHECK((*l)[0].parts[2].memOffset == 16);
  CHECK((*l)[0].parts[3].memOffset == 24);
}

TEST_CASE("abi layout: strings, slices, interfaces") {
  Types t;
  CHECK(layoutOf(t, fn("main.greet", {{"name", "string", false}, {"~r0", "string", true}})) ==
        "name string: RAX(.ptr) RBX(.len); ~r0 string: RAX(.ptr) RBX(.len)");
  CHECK(layoutOf(t, fn("main.sum", {{"xs", "[]int", false}, {"~r0", "int", true}})) ==
        "xs []int: RAX(.ptr) RBX(.len) RCX(.cap); ~r0 int: RAX");
  CHECK(layoutOf(t, fn("main.f", {{"e", "error", false}, {"a", "interface {}", false}})) ==
        "e error: RAX(.itab) RBX(.data); a interface {}: RCX(.type) RDI(.data)");
  CHECK(layoutOf(t, fn("main.parse", {{"s", "string", false}, {"~r0", "int", true}, {"~r1", "error", true}})) ==
        "s string: RAX(.ptr) RBX(.len); ~r0 int: RAX; ~r1 error: RBX(.itab) RCX(.data)");
}

TEST_CASE("abi layout: floats take X registers and do not use up integer ones") {
  Types t;
  CHECK(layoutOf(t, fn("main.scale", {{"v", "float64", false}, {"k", "int", false}, {"~r0", "float64", true}})) ==
        "v float64: X0; k int: RAX; ~r0 float64: X0");
  CHECK(layoutOf(t, fn("main.c", {{"c", "complex128", false}, {"f", "float32", false}})) ==
        "c complex128: X0(.real) X1(.imag); f float32: X2");
  // A struct mixing floats and integers: each field to its own register file.
  t.addStruct("main.Mix", 24, {{"A", 0, "int"}, {"F", 8, "float64"}, {"B", 16, "int32"}});
  CHECK(layoutOf(t, fn("main.mix", {{"m", "main.Mix", false}, {"n", "int", false}})) ==
        "m main.Mix: RAX(.A) X0(.F) RBX(.B); n int: RCX");
}

TEST_CASE("abi layout: the 10th integer goes on the stack, at RSP+8") {
  Types t;
  std::vector<std::tuple<std::string, std::string, bool>> ps;
  for (int i = 0; i < 10; i++) ps.emplace_back("a" + std::to_string(i), "int", false);
  auto l = layoutFunction(fn("main.ten", ps), t.lookup());
  REQUIRE(l);
  CHECK((*l)[8].parts[0].kind == ValuePart::IntReg);
  CHECK((*l)[8].parts[0].reg == 8);  // R11
  CHECK((*l)[9].onStack);
  CHECK((*l)[9].parts == std::vector<ValuePart>{{ValuePart::Stack, 0, 8, 8, "", K::Int, 0}});
  CHECK(describeLayout((*l)[9]) == "a9 int: RSP+8");
}

TEST_CASE("abi layout: a value that does not fit goes whole to the stack — later ones still take registers") {
  Types t;
  t.addStruct("main.Big", 80, {});
  for (int i = 0; i < 10; i++)
    t.table["main.Big"].fields.push_back({"F" + std::to_string(i), static_cast<uint64_t>(8 * i), "int"});
  CHECK(layoutOf(t, fn("main.big", {{"b", "main.Big", false}, {"n", "int", false}, {"~r0", "main.Big", true}})) ==
        "b main.Big: RSP+8; n int: RAX; ~r0 main.Big: RSP+88");
  // A string that no longer fits in the last register: all of it on the stack.
  std::vector<std::tuple<std::string, std::string, bool>> ps;
  for (int i = 0; i < 8; i++) ps.emplace_back("a" + std::to_string(i), "int", false);
  ps.emplace_back("s", "string", false);
  ps.emplace_back("z", "int", false);
  CHECK(layoutOf(t, fn("main.g", ps)).ends_with("a7 int: R10; s string: RSP+8; z int: R11"));
}

TEST_CASE("abi layout: arrays of 2+ elements go to the stack, of 1 to registers") {
  Types t;
  t.addArray("[2]int", "int", 2, 16);
  t.addArray("[1]string", "string", 1, 16);
  t.addArray("[0]int", "int", 0, 0);
  t.addArray("[64]uint8", "uint8", 64, 64);
  CHECK(layoutOf(t, fn("main.a", {{"p", "[2]int", false}, {"q", "[1]string", false}, {"n", "int", false}})) ==
        "p [2]int: RSP+8; q [1]string: RAX([0].ptr) RBX([0].len); n int: RCX");
  CHECK(layoutOf(t, fn("main.deepRecurse", {{"depth", "int", false}, {"pad", "[64]uint8", false}, {"~r0", "int", true}})) ==
        "depth int: RAX; pad [64]uint8: RSP+8; ~r0 int: RAX");
  // Zero-sized values are "stack-assigned": no data, no register.
  CHECK(layoutOf(t, fn("main.z", {{"e", "[0]int", false}, {"n", "int", false}})) == "e [0]int: (no data); n int: RAX");
}

TEST_CASE("abi layout: stack slots are aligned to the type — results follow the pointer-aligned arguments") {
  Types t;
  t.addArray("[3]int8", "int8", 3, 3);
  t.addArray("[2]int32", "int32", 2, 8);
  t.addArray("[2]int64", "int64", 2, 16);
  auto l = layoutFunction(fn("main.s", {{"a", "[3]int8", false},
                                        {"b", "[2]int32", false},
                                        {"c", "[3]int8", false},
                                        {"r", "[2]int64", true},
                                        {"q", "[3]int8", true}}),
                          t.lookup());
  REQUIRE(l);
  // a at 0..3, b aligned to 4: 4..12, c at 12..15; results start at 16.
  CHECK(describeAll(*l) == "a [3]int8: RSP+8; b [2]int32: RSP+12; c [3]int8: RSP+20; r [2]int64: RSP+24; q [3]int8: RSP+40");
  // Frame: 15 -> 16 of arguments, 16 + 3 -> 24 of results, no spill slots.
  CHECK(argumentFrameSize(*l) == 40u);
}

TEST_CASE("abi layout: padding inside a struct keeps in-memory offsets") {
  Types t;
  t.addStruct("main.P", 16, {{"a", 0, "int8"}, {"b", 8, "int64"}});
  auto l = layoutFunction(fn("main.p", {{"p", "main.P", false}}), t.lookup());
  REQUIRE(l);
  REQUIRE((*l)[0].parts.size() == 2);
  CHECK((*l)[0].parts[0] == ValuePart{ValuePart::IntReg, 0, 0, 1, ".a", K::Int8, 0});
  CHECK((*l)[0].parts[1] == ValuePart{ValuePart::IntReg, 1, 0, 8, ".b", K::Int64, 8});
}

TEST_CASE("abi layout: float registers run out after X14") {
  Types t;
  std::vector<std::tuple<std::string, std::string, bool>> ps;
  for (int i = 0; i < 16; i++) ps.emplace_back("f" + std::to_string(i), "float64", false);
  auto l = layoutFunction(fn("main.floats", ps), t.lookup());
  REQUIRE(l);
  CHECK(describeLayout((*l)[14]) == "f14 float64: X14");
  CHECK(describeLayout((*l)[15]) == "f15 float64: RSP+8");
}

TEST_CASE("abi layout: a generic shape instantiation's dictionary takes RAX") {
  Types t;
  t.add("go.shape.int_0", K::Int, 8);
  auto f = fn("main.Map[go.shape.int_0,go.shape.string_1]", {{"x", "go.shape.int_0", false}, {"~r0", "int", true}});
  CHECK(layoutOf(t, f) == ".dict uintptr: RAX; x go.shape.int_0: RBX; ~r0 int: RAX");
  // -N -l builds describe it: the same result.
  auto g = fn("main.Map[go.shape.int_0,go.shape.string_1]",
              {{".dict", "uintptr", false}, {"x", "go.shape.int_0", false}, {"~r0", "int", true}});
  CHECK(layoutOf(t, g) == ".dict uintptr: RAX; x go.shape.int_0: RBX; ~r0 int: RAX");

  CHECK(takesDictionary("main.Map[go.shape.int_0,go.shape.string_1]"));
  CHECK(takesDictionary("main.(*Stack[go.shape.int_0]).Push"));
  CHECK(takesDictionary("main.Stack[go.shape.int_0].Len"));
  CHECK_FALSE(takesDictionary("main.Map[go.shape.int_0,go.shape.string_1].func1"));
  CHECK_FALSE(takesDictionary("main.(*Stack[go.shape.int_0]).Push.func2"));
  CHECK_FALSE(takesDictionary("main.Map[int,string]"));
  CHECK_FALSE(takesDictionary("main.add"));
}

TEST_CASE("abi layout: a receiver DWARF leaves out comes back as `_`") {
  Types t;
  t.addStruct("main.T", 8, {{"n", 0, "int"}});
  // func (T) M(x int): DWARF lists only x.
  CHECK(layoutOf(t, fn("main.T.M", {{"x", "int", false}})) == "_ main.T: RAX(.n); x int: RBX");
  CHECK(layoutOf(t, fn("main.(*T).M", {{"x", "int", false}})) == "_ *main.T: RAX; x int: RBX");
  // Listed receivers, closures and method values are left alone.
  CHECK(layoutOf(t, fn("main.(*T).M", {{"t", "*main.T", false}, {"x", "int", false}})) == "t *main.T: RAX; x int: RBX");
  CHECK(layoutOf(t, fn("main.f.func1", {{"x", "int", false}})) == "x int: RAX");
  CHECK(layoutOf(t, fn("main.T.M-fm", {{"x", "int", false}})) == "x int: RAX");
}

TEST_CASE("abi layout: pclntab's argument frame reveals parameters DWARF omits") {
  Types t;
  auto f = fn("main.h", {{"e", "int", false}, {"v", "string", false}, {"~r0", "int", true}});
  // e, v in registers: spill 24; no stack values.
  CHECK(layoutOf(t, f, 24) == "e int: RAX; v string: RBX(.ptr) RCX(.len); ~r0 int: RAX");
  // func h(e int, v string, _ bool) int: 32 bytes. Arguments cannot be placed;
  // the result in a register can.
  auto l = layoutFunction(f, t.lookup(), 32);
  REQUIRE(l);
  CHECK((*l)[0].problem.find("DWARF omits a parameter") != std::string::npos);
  CHECK((*l)[0].parts.empty());
  CHECK((*l)[1].parts.empty());
  CHECK((*l)[2].problem.empty());
  CHECK(describeLayout((*l)[2]) == "~r0 int: RAX");
  // Only unnamed parameters: a placeholder says so.
  auto g = fn("main.k", {});
  auto lg = layoutFunction(g, t.lookup(), 16);
  REQUIRE(lg);
  REQUIRE(lg->size() == 1);
  CHECK(lg->front().name == "...");
}

TEST_CASE("abi layout: a type DWARF does not know makes later places unknown") {
  Types t;
  auto l = layoutFunction(fn("main.u", {{"a", "int", false},
                                        {"m", "main.Mystery", false},
                                        {"b", "int", false},
                                        {"~r0", "int", true}}),
                          t.lookup());
  REQUIRE(l);
  CHECK(describeLayout((*l)[0]) == "a int: RAX");
  CHECK((*l)[1].problem.find("main.Mystery") != std::string::npos);
  CHECK((*l)[2].problem.find("follows m main.Mystery") != std::string::npos);
  CHECK(describeLayout((*l)[3]) == "~r0 int: RAX");  // results restart at RAX
}

TEST_CASE("abi layout: ABI0 functions (all entry locations on the stack) are laid out without registers") {
  Types t;
  auto f = fn("runtime.write", {{"fd", "int", false}, {"p", "int", false}, {"~r0", "int32", true}});
  f.lowPc = 0x1000;
  f.highPc = 0x1100;
  for (int i = 0; i < 2; i++) {
    LocationPiece piece;
    piece.kind = LocationPiece::Kind::Stack;
    piece.cfaOffset = 8 * i;
    f.params[i].locations.push_back({0x1000, 0x1010, {piece}});
  }
  CHECK(layoutOf(t, f) == "fd int: RSP+8; p int: RSP+16; ~r0 int32: RSP+24");
  // With a register location it is ABIInternal.
  f.params[0].locations[0].pieces[0] = LocationPiece{LocationPiece::Kind::Register, 0};
  CHECK(layoutOf(t, f) == "fd int: RAX; p int: RBX; ~r0 int32: RAX");
}
