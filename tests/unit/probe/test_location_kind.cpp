// What a location names: a function goscope matches, or a place Delve alone
// resolves (probe/location_kind.hpp).
#include <doctest/doctest.h>

#include "probe/location_kind.hpp"

using goscope::namesFunction;

TEST_CASE("location kind: function names and patterns are functions") {
  CHECK(namesFunction("main.doWork"));
  CHECK(namesFunction("main.(*Server).Handle"));
  CHECK(namesFunction("main.*"));
  CHECK(namesFunction("net/http.(*conn).serve"));
  CHECK(namesFunction("doWork"));  // a short name: a function word, resolved (or refused) later
}

TEST_CASE("location kind: file:line, addresses and offsets are Delve's") {
  CHECK_FALSE(namesFunction("main.go:12"));
  CHECK_FALSE(namesFunction("*0x4567"));
  CHECK_FALSE(namesFunction("+2"));
  CHECK_FALSE(namesFunction("-1"));
  CHECK_FALSE(namesFunction("12"));
  CHECK_FALSE(namesFunction(""));
}
