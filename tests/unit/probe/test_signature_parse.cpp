// Signatures a user gives for stripped binaries: parsing, and their layout
// without DWARF.
#include <doctest/doctest.h>

#include "probe/abi_layout.hpp"
#include "probe/signature_parse.hpp"

using namespace goscope;

namespace {

std::string params(const UserSignature& s) {
  std::string out;
  for (const auto& p : s.params) out += (out.empty() ? "" : ", ") + std::string(p.isResult ? "->" : "") + p.name + " " + p.type;
  return out;
}

std::string layout(std::string_view sig) {
  auto l = layoutFromSignature(sig);
  REQUIRE_MESSAGE(l, (l ? "" : l.error().message));
  std::string s;
  for (const auto& v : *l) s += (s.empty() ? "" : "; ") + describeLayout(v);
  return s;
}

std::string error(std::string_view sig) {
  auto l = layoutFromSignature(sig);
  REQUIRE_FALSE(l);
  CHECK(l.error().kind == ErrorKind::Usage);
  return l.error().message + " | " + l.error().hint;
}

}  // namespace

TEST_CASE("signature parse: names, grouping, results") {
  auto s = parseUserSignature("main.add(x int, y int) int");
  REQUIRE(s);
  CHECK(s->funcName == "main.add");
  CHECK(params(*s) == "x int, y int, ->~r0 int");

  s = parseUserSignature("main.add(x, y int) int");
  REQUIRE(s);
  CHECK(params(*s) == "x int, y int, ->~r0 int");

  s = parseUserSignature("  main.parse(a string, n int) (int, error)  ");
  REQUIRE(s);
  CHECK(params(*s) == "a string, n int, ->~r0 int, ->~r1 error");

  s = parseUserSignature("main.(*Server).Handle(s *main.Server, path string) (n int, err error)");
  REQUIRE(s);
  CHECK(s->funcName == "main.(*Server).Handle");
  CHECK(params(*s) == "s *main.Server, path string, ->n int, ->err error");

  s = parseUserSignature("main.add(int, int) int");
  REQUIRE(s);
  CHECK(params(*s) == "~p0 int, ~p1 int, ->~r0 int");

  s = parseUserSignature("func main.f(m map[string]int, c chan int, f func(int, string) bool, xs ...string)");
  REQUIRE(s);
  CHECK(params(*s) == "m map[string]int, c chan int, f func(int, string) bool, xs []string");

  s = parseUserSignature("main.noargs()");
  REQUIRE(s);
  CHECK(s->params.empty());

  s = parseUserSignature("main.f(a, b int, s string,)");
  REQUIRE(s);
  CHECK(params(*s) == "a int, b int, s string");
}

TEST_CASE("signature parse: syntax errors say what is wrong") {
  CHECK_FALSE(parseUserSignature("main.add"));
  CHECK_FALSE(parseUserSignature("(x int)"));
  CHECK_FALSE(parseUserSignature("main.f(x int, y)"));        // y has no type
  CHECK_FALSE(parseUserSignature("main.f(x int, ,y int)"));   // empty parameter
  CHECK_FALSE(parseUserSignature("main.f(x int) a int"));     // a named result needs parentheses
  CHECK_FALSE(parseUserSignature("main.f(x int, map[string]int)"));  // mixed named and unnamed
  auto e = parseUserSignature("main.add x int");
  REQUIRE_FALSE(e);
  CHECK(e.error().kind == ErrorKind::Usage);
  CHECK(e.error().hint.find("main.add(x int, y int) int") != std::string::npos);
}

TEST_CASE("signature layout: the same ABI rules as with DWARF") {
  CHECK(layout("main.add(x int, y int) int") == "x int: RAX; y int: RBX; ~r0 int: RAX");
  CHECK(layout("main.parse(a string, n int) (int, error)") ==
        "a string: RAX(.ptr) RBX(.len); n int: RCX; ~r0 int: RAX; ~r1 error: RBX(.itab) RCX(.data)");
  CHECK(layout("main.f(p *main.Server, b []byte, ok bool, u uintptr)") ==
        "p *main.Server: RAX; b []byte: RBX(.ptr) RCX(.len) RDI(.cap); ok bool: RSI; u uintptr: R8");
  CHECK(layout("main.g(a any, e interface{}, v float64, n int8)") ==
        "a any: RAX(.type) RBX(.data); e interface{}: RCX(.type) RDI(.data); v float64: X0; n int8: RSI");
  CHECK(layout("main.h(m map[string]int, c chan int, fn func(int) int, r rune, bs [4]byte)") ==
        "m map[string]int: RAX; c chan int: RBX; fn func(int) int: RCX; r rune: RDI; bs [4]byte: RSP+8");
  // Ten integers: the last one on the stack.
  CHECK(layout("main.ten(a, b, c, d, e, f, g, h, i, j int)").ends_with("i int: R11; j int: RSP+8"));
  // Shapes from names: a slice of a basic type knows its element; a pointer is opaque.
  auto l = layoutFromSignature("main.s(xs []int32, p *main.T)");
  REQUIRE(l);
  REQUIRE((*l)[0].shape->elem);
  CHECK((*l)[0].shape->elem->size == 4);
  CHECK_FALSE((*l)[1].shape->elem);
}

TEST_CASE("signature layout: unknown named types are refused, with the list of supported ones") {
  std::string e = error("main.f(p main.Point) int");
  CHECK(e.find("p: unsupported type `main.Point`") != std::string::npos);
  CHECK(e.find("without DWARF goscope knows bool") != std::string::npos);
  CHECK(e.find("*T (an opaque pointer)") != std::string::npos);
  CHECK(error("main.f(x int) main.Result").find("unsupported type `main.Result`") != std::string::npos);
  CHECK(error("main.f(xs [3]main.T)").find("`main.T`") != std::string::npos);
}

TEST_CASE("signature layout: named types take their kind from the binary's type data") {
  // What runtimeTypesNamed would find in a binary (a table here: the real
  // lookup is tested on fixtures in tests/runtime/test_interface_signatures.cpp).
  NamedTypeKinds kinds = [](std::string_view n) -> std::vector<GoType::Kind> {
    if (n == "io.Writer" || n == "main.Shape") return {GoType::Kind::Interface};
    if (n == "main.Point") return {GoType::Kind::Struct};
    if (n == "v1.Thing") return {GoType::Kind::Interface, GoType::Kind::Int};  // two packages named v1
    return {};
  };
  auto l = layoutFromSignature("main.emit(w io.Writer, n int) (int, error)", kinds);
  REQUIRE_MESSAGE(l, (l ? "" : l.error().message));
  // Two words like error: itab in RAX, data in RBX; then n in RCX.
  CHECK((*l)[0].shape->kind == GoType::Kind::Interface);
  CHECK_FALSE((*l)[0].shape->emptyInterface);
  CHECK((*l)[0].shape->name == "io.Writer");
  CHECK(describeLayout((*l)[0]) == "w io.Writer: RAX(.itab) RBX(.data)");
  CHECK(describeLayout((*l)[1]) == "n int: RCX");
  // Inside composite types too; a pointer to one stays opaque.
  auto s = layoutFromSignature("main.all(xs []main.Shape, p *main.Shape)", kinds);
  REQUIRE(s);
  REQUIRE((*s)[0].shape->elem);
  CHECK((*s)[0].shape->elem->kind == GoType::Kind::Interface);
  CHECK((*s)[0].shape->elem->size == 16);
  // Anything else is refused by what it is.
  auto st = layoutFromSignature("main.f(p main.Point) int", kinds);
  REQUIRE_FALSE(st);
  CHECK(st.error().message == "signature `main.f(p main.Point) int`: p: `main.Point` is a struct in the binary's runtime "
                              "type data, not an interface");
  auto amb = layoutFromSignature("main.f(t v1.Thing)", kinds);
  REQUIRE_FALSE(amb);
  CHECK(amb.error().message.find("`v1.Thing` names 2 types in the binary's runtime type data (packages of one name), an int among them") !=
        std::string::npos);
  auto none = layoutFromSignature("main.f(r io.Reader)", kinds);
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find("`io.Reader` is not a type in the binary's runtime type data") != std::string::npos);
  // Unqualified names are never looked up: still unsupported.
  auto frob = layoutFromSignature("main.f(x frob)", kinds);
  REQUIRE_FALSE(frob);
  CHECK(frob.error().message.find("unsupported type `frob`") != std::string::npos);
  // Before the binary is known, every qualified name passes the syntax check.
  CHECK(layoutFromSignature("main.f(p main.Point) int", namedTypesUnchecked()));
}
