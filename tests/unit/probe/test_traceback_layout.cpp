#include <doctest/doctest.h>

#include "probe/argument_sources.hpp"
#include "probe/method_signature.hpp"
#include "probe/traceback_layout.hpp"

using namespace goscope;

namespace {

ArgInfoItem word(uint8_t offset, uint8_t size = 8) { return {ArgInfoItem::Kind::Word, offset, size}; }
ArgInfoItem group(std::vector<ArgInfoItem> items) {
  ArgInfoItem g;
  g.kind = ArgInfoItem::Kind::Group;
  g.items = std::move(items);
  return g;
}

}  // namespace

TEST_CASE("placeWords: the stack-growth path's saves place each word, floats included") {
  // func f(r struct{ X int64; V float64 }, n int): X in RAX (slot 0), V in X0 (slot 8), n in RBX (slot 16).
  ArgPlaces places{ArgPlaces::From::Spills, {{0, 8, false, 0}, {8, 8, true, 0}, {16, 8, false, 1}}};
  auto t = placeWords({group({word(0), word(8)}), word(16)}, places);
  REQUIRE(t.words.size() == 3);
  CHECK(t.words[0].parts.at(0).kind == ValuePart::IntReg);
  CHECK(t.words[0].parts.at(0).reg == 0);
  CHECK(t.words[1].parts.at(0).kind == ValuePart::FloatReg);
  CHECK(t.words[2].parts.at(0).reg == 1);
  CHECK(t.placesFrom.find("stack-growth") != std::string::npos);
}

TEST_CASE("placeWords: words below every spill slot are on the stack, read at RSP+8+offset") {
  // func deep(n int, pad [2]byte): pad on the stack at 0 and 1, n's slot at 8.
  ArgPlaces places{ArgPlaces::From::Spills, {{8, 8, false, 0}}};
  auto t = placeWords({word(8), group({word(0, 1), word(1, 1)})}, places);
  REQUIRE(t.words.size() == 3);
  CHECK(t.words[0].parts.at(0).kind == ValuePart::IntReg);
  CHECK(t.words[1].onStack);
  CHECK(t.words[1].parts.at(0).stackOffset == 8);
  CHECK(t.words[2].parts.at(0).stackOffset == 9);
  CHECK(t.words[2].parts.at(0).size == 1);
  CHECK(t.words[2].shape->size == 1);  // reads its byte only
}

TEST_CASE("placeWords: integer order, and unknown places leave every word unplaced with the reason") {
  auto t = placeWords({word(0), group({word(8), word(16)})}, ArgPlaces{ArgPlaces::From::IntegerOrder});
  REQUIRE(t.words.size() == 3);
  CHECK(t.words[2].parts.at(0).reg == 2);  // RCX
  ArgPlaces none;
  none.why = "it never grows its stack and uses float registers";
  auto u = placeWords({word(0), word(8)}, none);
  REQUIRE(u.words.size() == 2);
  CHECK(u.words[0].parts.empty());
  CHECK(u.words[1].problem == none.why);
  CHECK(u.placesFrom == "unknown: " + none.why);
  // A slot the saves do not name, above the first one: unplaced, not guessed.
  auto v = placeWords({word(0), word(16)}, ArgPlaces{ArgPlaces::From::Spills, {{0, 8, false, 0}}});
  CHECK(v.words[1].problem.find("not among") != std::string::npos);
}

TEST_CASE("parseMethodName: receivers and methods as the runtime names them, nothing else") {
  auto m = parseMethodName("main.(*Server).Handle");
  REQUIRE(m);
  CHECK(m->receiver == "main.Server");
  CHECK(m->pointer);
  CHECK(m->method == "Handle");
  m = parseMethodName("github.com/a/b.T.M");
  REQUIRE(m);
  CHECK(m->receiver == "b.T");
  CHECK_FALSE(m->pointer);
  CHECK(m->method == "M");
  CHECK_FALSE(parseMethodName("main.add"));
  CHECK_FALSE(parseMethodName("main.T.M.func1"));      // a closure inside a method
  CHECK_FALSE(parseMethodName("main.(*T).M-fm"));      // a method value's wrapper
  CHECK_FALSE(parseMethodName("main.(*Stack[go.shape.int]).Push"));
}

TEST_CASE("argInfoFor: the compiler's grouping and limits") {
  ShapeBuilder b;
  auto shapes = [&](std::vector<std::string> names) {
    std::vector<ShapePtr> out;
    for (const auto& n : names) out.push_back(b.build(n).value());
    return out;
  };
  CHECK(argInfoShape(argInfoFor(shapes({"*int", "string", "int"}))) == "(w, {w, w}, w)");
  CHECK(argInfoShape(argInfoFor(shapes({"[]int", "error", "complex128"}))) == "({w, w, w}, {w, w}, {w, w})");
  CHECK(argInfoShape(argInfoFor(shapes({"[3]int64", "[0]int"}))) == "({w, w, w}, {})");
  // Ten components, then `...`.
  CHECK(argInfoShape(argInfoFor(shapes({"[12]uint8"}))) == "({w, w, w, w, w, w, w, w, w, w, ...})");
  CHECK(argInfoShape(argInfoFor(shapes({"string", "string", "string", "string", "string", "string"}))) ==
        "({w, w}, {w, w}, {w, w}, {w, w}, {w, w}, ...)");
  // Five levels deep: `{...}`.
  CHECK(argInfoShape(argInfoFor(shapes({"[1][1][1][1][1]int"}))) == "({{{{{...}}}}})");
}

TEST_CASE("layoutText: a typed receiver in place of the layout's first argument") {
  auto t = placeWords({word(0), group({group({word(8), word(16)}), word(24)})}, ArgPlaces{ArgPlaces::From::IntegerOrder});
  CHECK(layoutText(t) == "(w, {{w, w}, w})");
  t.receiverWords = 1;
  t.receiverType = "*main.Server";
  CHECK(layoutText(t) == "(recv *main.Server, {{w, w}, w})");
  auto only = placeWords({group({word(0), word(8)})}, ArgPlaces{ArgPlaces::From::IntegerOrder});
  only.receiverWords = 2;
  only.receiverType = "main.Point";
  CHECK(layoutText(only) == "(recv main.Point)");
}
