// Decoded words put back into the runtime's traceback grouping, with and
// without a typed receiver taking the place of the first argument's words.
#include <doctest/doctest.h>

#include "backend/bpf/function_capture.hpp"

using namespace goscope;

namespace {

ArgInfoItem word(uint8_t offset) { return {ArgInfoItem::Kind::Word, offset, 8}; }
ArgInfoItem group(std::vector<ArgInfoItem> items) {
  ArgInfoItem g;
  g.kind = ArgInfoItem::Kind::Group;
  g.items = std::move(items);
  return g;
}
Value uintValue(uint64_t u, std::string name = {}) {
  Value v;
  v.kind = Value::Kind::Uint;
  v.u = u;
  v.name = std::move(name);
  return v;
}

}  // namespace

TEST_CASE("groupWords: words grouped as the layout groups them, a typed receiver kept whole") {
  // (*Server).Handle(s *Server, req Request{Path string, ID int}): 4 words.
  const std::vector<ArgInfoItem> args = {word(0), group({group({word(8), word(16)}), word(24)})};
  auto t = placeWords(args, ArgPlaces{ArgPlaces::From::IntegerOrder});
  std::vector<Value> words = {uintValue(0xc000), uintValue(0x4c78), uintValue(6), uintValue(7)};
  std::vector<Value> out;
  bool more = true;
  groupWords(t, words, out, more);
  CHECK_FALSE(more);
  REQUIRE(out.size() == 2);
  CHECK(out[0].u == 0xc000);
  CHECK(out[0].type == "uintptr");
  REQUIRE(out[1].kind == Value::Kind::Group);
  REQUIRE(out[1].children.size() == 2);
  CHECK(out[1].children[0].children[1].u == 6);
  CHECK(out[1].children[1].u == 7);

  // The receiver typed: one value for word 0, then words 1-3.
  t.receiverWords = 1;
  t.receiverType = "*main.Server";
  std::vector<Value> typed = {uintValue(0xc000, "recv"), uintValue(0x4c78), uintValue(6), uintValue(7)};
  groupWords(t, typed, out, more);
  REQUIRE(out.size() == 2);
  CHECK(out[0].name == "recv");
  CHECK(out[1].children[0].children[0].u == 0x4c78);
  CHECK(out[1].children[0].children[1].u == 6);
  CHECK(out[1].children[1].u == 7);

  // A two-word receiver (a struct by value): one value, the next word after it.
  auto s = placeWords({group({word(0), word(8)}), word(16)}, ArgPlaces{ArgPlaces::From::IntegerOrder});
  s.receiverWords = 2;
  s.receiverType = "main.Point";
  std::vector<Value> two = {uintValue(1, "recv"), uintValue(9)};
  groupWords(s, two, out, more);
  REQUIRE(out.size() == 2);
  CHECK(out[0].name == "recv");
  CHECK(out[1].u == 9);
  // Fewer decoded values than words: the missing ones say so, nothing shifts.
  std::vector<Value> short1 = {uintValue(1, "recv")};
  groupWords(s, short1, out, more);
  REQUIRE(out.size() == 2);
  CHECK(out[1].kind == Value::Kind::Unavailable);
  CHECK(out[1].unavailable == "not decoded");
}
