#include <doctest/doctest.h>

#include <vector>

#include "binary/arg_info.hpp"

using namespace goscope;

namespace {

// The compiler's operators (internal/abi/type.go).
constexpr uint8_t End = 0xff, Open = 0xfe, Close = 0xfd, More = 0xfc, Beyond = 0xfb;

std::string shape(std::vector<uint8_t> bytes) {
  auto r = parseArgInfo(bytes);
  REQUIRE(r);
  return argInfoShape(*r);
}

std::string error(std::vector<uint8_t> bytes) {
  auto r = parseArgInfo(bytes);
  REQUIRE(!r);
  return r.error().message;
}

}  // namespace

TEST_CASE("parseArgInfo: a struct of an int and a string, then an int, grouped as the traceback groups it") {
  // func ship(o struct{ ID int64; Note string }, n int): o at 0 (ID 0, Note 8 and 16), n at 24.
  auto r = parseArgInfo(std::vector<uint8_t>{Open, 0, 8, Open, 8, 8, 16, 8, Close, Close, 24, 8, End});
  REQUIRE(r);
  CHECK(argInfoShape(*r) == "({w, {w, w}}, w)");
  CHECK(argInfoWords(*r) == 4);
  REQUIRE(r->size() == 2);
  CHECK(r->at(1).kind == ArgInfoItem::Kind::Word);
  CHECK(r->at(1).offset == 24);
  CHECK(r->at(1).size == 8);
  CHECK(r->at(0).items.at(1).items.at(1).offset == 16);
}

TEST_CASE("parseArgInfo: the compiler's limits: ... after ten components, _ for an offset past the encoding") {
  CHECK(shape({0, 1, 1, 1, 2, 1, More, End}) == "(w, w, w, ...)");
  CHECK(shape({Open, 0, 8, More, Close, End}) == "({w, ...})");
  CHECK(shape({Beyond, 0, 4, End}) == "(_, w)");
  CHECK(shape({End}) == "()");
  CHECK(argInfoWords(parseArgInfo(std::vector<uint8_t>{Open, Open, 0, 8, Close, More, Close, End}).value()) == 1);
}

TEST_CASE("parseArgInfo: malformed layouts are refused, not guessed") {
  CHECK(error({0, 8}).find("no end") != std::string::npos);
  CHECK(error({Open, 0, 8, End}).find("ends inside a group") != std::string::npos);
  CHECK(error({Close, End}).find("never opened") != std::string::npos);
  CHECK(error({0, 0, End}).find("impossible size") != std::string::npos);
  CHECK(error({0, 9, End}).find("impossible size") != std::string::npos);
  CHECK(error({0xf5, End}).find("unknown operator") != std::string::npos);
  CHECK(error({Open, Open, Open, Open, Open, Open, 0, 8, Close, Close, Close, Close, Close, Close, End}).find("deeper") !=
        std::string::npos);
  CHECK(error({0}).find("without its size") != std::string::npos);
}
