#include <doctest/doctest.h>

#include "binary/go_signature.hpp"

using namespace goscope;

namespace {
std::string sig(std::string_view name, std::vector<SignatureParam> ps) { return formatSignature(name, ps); }
}  // namespace

TEST_CASE("formatSignature: parameters, one unnamed result") {
  CHECK(sig("main.add", {{"x", "int"}, {"y", "int"}, {"~r0", "int", true}}) == "main.add(x int, y int) int");
}

TEST_CASE("formatSignature: no parameters, no results") { CHECK(sig("main.main", {}) == "main.main()"); }

TEST_CASE("formatSignature: several unnamed results are parenthesized") {
  CHECK(sig("main.f", {{"a", "int"}, {"~r0", "int", true}, {"~r1", "error", true}}) == "main.f(a int) (int, error)");
}

TEST_CASE("formatSignature: named results keep their names, even a single one") {
  CHECK(sig("main.g", {{"n", "int", true}, {"err", "error", true}}) == "main.g() (n int, err error)");
  CHECK(sig("main.h", {{"n", "int", true}}) == "main.h() (n int)");
}

TEST_CASE("formatSignature: a result declared _ (~bN) prints as _") {
  CHECK(sig("main.blank", {{"y", "int"}, {"~b0", "int", true}, {"err", "error", true}}) ==
        "main.blank(y int) (_ int, err error)");
}

TEST_CASE("formatSignature: the receiver is the first parameter") {
  CHECK(sig("main.(*Server).Handle", {{"s", "*main.Server"},
                                      {"req", "main.Request"},
                                      {"~r0", "main.Response", true},
                                      {"~r1", "error", true}}) ==
        "main.(*Server).Handle(s *main.Server, req main.Request) (main.Response, error)");
}

TEST_CASE("formatSignature: synthetic parameter names print as _") {
  CHECK(sig("main.f", {{"~p0", "int"}, {"", "string"}, {"_", "bool"}, {"~b1", "int"}}) ==
        "main.f(_ int, _ string, _ bool, _ int)");
}

TEST_CASE("formatSignature: results listed before parameters still print last") {
  CHECK(sig("main.f", {{"~r0", "int", true}, {"a", "int"}}) == "main.f(a int) int");
}

TEST_CASE("splitSignature: plain, method, generic and func-typed parts") {
  auto p = splitSignature("main.add(x int, y int) int");
  REQUIRE(p);
  CHECK(p->name == "main.add");
  CHECK(p->params == "(x int, y int)");
  CHECK(p->results == " int");

  p = splitSignature("main.(*Stack[T]).Push(s *main.Stack[T], v T)");
  REQUIRE(p);
  CHECK(p->name == "main.(*Stack[T]).Push");
  CHECK(p->params == "(s *main.Stack[T], v T)");
  CHECK(p->results.empty());

  p = splitSignature("main.apply(f func(int) (int, error)) (n int, err error)");
  REQUIRE(p);
  CHECK(p->name == "main.apply");
  CHECK(p->params == "(f func(int) (int, error))");
  CHECK(p->results == " (n int, err error)");

  p = splitSignature("main.Map[go.shape.struct { A int }_0](xs []go.shape.struct { A int }_0)");
  REQUIRE(p);
  CHECK(p->name == "main.Map[go.shape.struct { A int }_0]");

  CHECK_FALSE(splitSignature("main.add"));
  CHECK_FALSE(splitSignature("main.add(x int"));
}

TEST_CASE("splitGenericName: functions and methods of generic types") {
  auto g = splitGenericName("main.Map[go.shape.int_0,go.shape.string_1]");
  CHECK(g.stem == "main.Map[]");
  CHECK(g.typeArgs == std::vector<std::string>{"go.shape.int_0", "go.shape.string_1"});

  g = splitGenericName("main.(*Stack[go.shape.int_0]).Push");
  CHECK(g.stem == "main.(*Stack[]).Push");
  CHECK(g.typeArgs == std::vector<std::string>{"go.shape.int_0"});

  g = splitGenericName("main.F[go.shape.map[string]int_0,go.shape.struct { A int; B []int }_1]");
  CHECK(g.stem == "main.F[]");
  CHECK(g.typeArgs == std::vector<std::string>{"go.shape.map[string]int_0", "go.shape.struct { A int; B []int }_1"});

  g = splitGenericName("main.add");
  CHECK(g.stem == "main.add");
  CHECK(g.typeArgs.empty());
}

TEST_CASE("shapeIndex") {
  CHECK(shapeIndex("go.shape.int_0") == 0);
  CHECK(shapeIndex("go.shape.*uint8_12") == 12);
  CHECK(shapeIndex("go.shape.struct { a_b int }_1") == 1);
  CHECK(shapeIndex("int") == -1);
  CHECK(shapeIndex("go.shape.int_") == -1);
  CHECK(shapeIndex("go.shape.int_x") == -1);
}

TEST_CASE("replaceShapes maps shape arguments to type parameter names") {
  std::vector<std::string> shapes = {"go.shape.int_0", "go.shape.string_1"};
  CHECK(replaceShapes("main.Map[go.shape.int_0,go.shape.string_1](xs []go.shape.int_0, f func(go.shape.int_0) "
                      "go.shape.string_1) []go.shape.string_1",
                      shapes, {"T", "U"}) == "main.Map[T,U](xs []T, f func(T) U) []U");
  // Longest first: _1 must not eat the start of _10.
  std::vector<std::string> many = {"go.shape.int_1", "go.shape.int_10"};
  CHECK(replaceShapes("go.shape.int_10 go.shape.int_1", many,
                      {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"}) == "K B");
}
