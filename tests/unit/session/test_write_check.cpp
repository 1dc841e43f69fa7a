// `set` refuses values Delve would convert silently, before anything is
// written (issue #12 item 5): out-of-range literals, expressions, values of
// kinds Delve cannot assign.
#include <doctest/doctest.h>

#include "session/write_check.hpp"

using goscope::session::checkWrite;
using goscope::session::WriteKind;

namespace {
bool ok(WriteKind k, const std::string& type, const std::string& v) {
  auto r = checkWrite(k, type, v);
  return r.has_value() && !r->has_value();
}
bool refused(WriteKind k, const std::string& type, const std::string& v) { return !checkWrite(k, type, v).has_value(); }
}  // namespace

TEST_CASE("write check: integer literals must fit the type") {
  CHECK(ok(WriteKind::Signed, "int64", "5"));
  CHECK(ok(WriteKind::Signed, "int64", "-9223372036854775808"));
  CHECK(ok(WriteKind::Signed, "int64", "9223372036854775807"));
  CHECK(refused(WriteKind::Signed, "int64", "9223372036854775808"));
  CHECK(refused(WriteKind::Signed, "int64", "-9223372036854775809"));   // was: INT64_MAX written
  CHECK(refused(WriteKind::Signed, "int64", "99999999999999999999999"));  // was: 200376420520689663 written
  CHECK(ok(WriteKind::Signed, "int8", "-128"));
  CHECK(refused(WriteKind::Signed, "int8", "128"));
  CHECK(ok(WriteKind::Unsigned, "uint8", "0xff"));
  CHECK(refused(WriteKind::Unsigned, "uint8", "0x100"));
  CHECK(refused(WriteKind::Unsigned, "uint64", "-1"));
  CHECK(ok(WriteKind::Unsigned, "uint64", "18446744073709551615"));
  CHECK(ok(WriteKind::Signed, "int", "0b1010"));
  CHECK(ok(WriteKind::Signed, "int", "0o17"));
  CHECK(ok(WriteKind::Signed, "int", "1_000_000"));
  CHECK(ok(WriteKind::Signed, "int", "0"));
  CHECK(refused(WriteKind::Signed, "int", "09"));
}

TEST_CASE("write check: expressions are refused, names are left to check") {
  CHECK(refused(WriteKind::Signed, "int64", "1<<70"));  // was: 0 written
  CHECK(refused(WriteKind::Signed, "int64", "2 + 3"));
  auto name = checkWrite(WriteKind::Signed, "int64", "main.other");
  REQUIRE(name.has_value());
  REQUIRE(name->has_value());
  CHECK(**name == "main.other");
}

TEST_CASE("write check: bools, floats and kinds Delve cannot write") {
  CHECK(ok(WriteKind::Bool, "bool", "true"));
  CHECK(refused(WriteKind::Bool, "bool", "1"));
  CHECK(ok(WriteKind::Float, "float64", "1.5"));
  CHECK(ok(WriteKind::Float, "float64", "-2e10"));
  CHECK(refused(WriteKind::Float, "float64", "1.5x"));
  CHECK(refused(WriteKind::Float, "float32", "1e39"));
  CHECK(refused(WriteKind::Other, "string", "\"abc\""));
  CHECK(ok(WriteKind::Pointer, "*main.Server", "nil"));
}
