// Which read expressions the direct read takes (backend/memory/read_selector.hpp):
// the parse and the variable names a path may start with. Resolving against
// DWARF is tested on real binaries (tests/runtime/test_strategy_cli.cpp,
// tests/release/test_release_contract.cpp).
#include <doctest/doctest.h>

#include "backend/memory/read_selector.hpp"

using namespace goscope;

TEST_CASE("read selector: variables, fields and len/cap parse, other expressions do not") {
  auto v = parseReadSelector("main.cfg");
  REQUIRE(v);
  CHECK(v->builtin.empty());
  CHECK(v->path == "main.cfg");
  auto f = parseReadSelector(" main.cfg.Limits.Max ");
  REQUIRE(f);
  CHECK(f->path == "main.cfg.Limits.Max");
  auto l = parseReadSelector("len(main.items)");
  REQUIRE(l);
  CHECK(l->builtin == "len");
  CHECK(l->path == "main.items");
  auto c = parseReadSelector("cap( main.cfg.Tags )");
  REQUIRE(c);
  CHECK(c->builtin == "cap");
  CHECK(c->path == "main.cfg.Tags");
  auto p = parseReadSelector("github.com/acme/api-v2/internal%2ev1.Version");
  REQUIRE(p);
  CHECK(p->path == "github.com/acme/api-v2/internal%2ev1.Version");
  for (const char* e : {"main.items[1]", "*main.primary", "main.f()", "len(main.f())", "main.a + 1", "len()", "",
                        "main..x", ".main", "main.x.", "len(main.items", "(main.x)", "main.m[\"k\"]"})
    CHECK_MESSAGE(!parseReadSelector(e), e);
}

TEST_CASE("read selector: a path's variable candidates, longest first, none inside the package path") {
  CHECK(variableCandidates("main.cfg.Name") == std::vector<std::string>{"main.cfg.Name", "main.cfg", "main"});
  CHECK(variableCandidates("gopkg.in/yaml.v3.Version") ==
        std::vector<std::string>{"gopkg.in/yaml.v3.Version", "gopkg.in/yaml.v3", "gopkg.in/yaml"});
  CHECK(variableCandidates("main") == std::vector<std::string>{"main"});
}

TEST_CASE("read selector: len and cap apply where Go's do") {
  using K = GoType::Kind;
  for (K k : {K::String, K::Array, K::Slice, K::Map, K::Chan}) CHECK(builtinApplies("len", k));
  for (K k : {K::Int, K::Struct, K::Pointer, K::Interface, K::Func}) CHECK_FALSE(builtinApplies("len", k));
  for (K k : {K::Array, K::Slice, K::Chan}) CHECK(builtinApplies("cap", k));
  for (K k : {K::String, K::Map, K::Int}) CHECK_FALSE(builtinApplies("cap", k));
}
