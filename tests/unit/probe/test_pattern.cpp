#include <doctest/doctest.h>

#include "probe/pattern.hpp"

using goscope::Pattern;

static bool m(const char* pat, const char* name) {
  auto p = Pattern::parse(pat);
  REQUIRE(p);
  return p->matches(name);
}

TEST_CASE("glob: Go punctuation matches itself") {
  CHECK(m("main.(*Server).Handle", "main.(*Server).Handle"));
  CHECK_FALSE(m("main.(*Server).Handle", "main.(*Server).Handler"));
  CHECK(m("main.(*Server).*", "main.(*Server).Handle"));
  CHECK(m("main.main.func1", "main.main.func1"));
  CHECK(m("main.main.func*", "main.main.func12"));
  CHECK(m("main.*", "main.main.func1"));
  CHECK_FALSE(m("main.*", "runtime.main"));
  CHECK(m("*.doWork", "main.doWork"));
  CHECK(m("runtime.gc?ark*", "runtime.gcMarkDone"));
}

TEST_CASE("generic instantiations match as Go prints them") {
  CHECK(m("main.Map[...]", "main.Map[go.shape.int_0,go.shape.string_1]"));
  CHECK(m("main.Map*", "main.Map[go.shape.int_0,go.shape.string_1]"));
  CHECK(m("main.Map[go.shape.int_0,go.shape.string_1]", "main.Map[go.shape.int_0,go.shape.string_1]"));
  CHECK_FALSE(m("main.Map[...]", "main.Mapper"));
  CHECK(goscope::goPrintName("pkg.(*List[go.shape.int_0]).Push") == "pkg.(*List[...]).Push");
  CHECK(goscope::goPrintName("main.F[map[string]int]") == "main.F[...]");
}

TEST_CASE("regex between slashes") {
  CHECK(m("/^main\\.(add|doWork)$/", "main.add"));
  CHECK(m("/^main\\.(add|doWork)$/", "main.doWork"));
  CHECK_FALSE(m("/^main\\.(add|doWork)$/", "main.adder"));
  CHECK(m("/Server/", "main.(*Server).Handle"));
  auto bad = Pattern::parse("/(unclosed/");
  CHECK_FALSE(bad);
  CHECK(bad.error().kind == goscope::ErrorKind::Usage);
}

TEST_CASE("star backtracking") {
  CHECK(goscope::globMatch("a*b*c", "aXXbYYbZZc"));
  CHECK_FALSE(goscope::globMatch("a*b*c", "aXXbYYbZZ"));
  CHECK(goscope::globMatch("*", ""));
  CHECK_FALSE(goscope::globMatch("?", ""));
  CHECK_FALSE(Pattern::parse(""));
}

TEST_CASE("regex too complex to match in bounded time is refused, a long alternation of names is not") {
  auto deep = Pattern::parse("/" + std::string(20000, '(') + std::string(20000, ')') + "QQQ/");
  REQUIRE_FALSE(deep);
  CHECK(deep.error().kind == goscope::ErrorKind::Usage);
  CHECK(deep.error().message.find("too complex") != std::string::npos);
  std::string names = "/^(";
  for (int i = 0; i < 300; i++) names += (i ? "|" : "") + std::string("main\\.\\(\\*Server\\)\\.Handle") + std::to_string(i);
  names += ")$/";
  auto alt = Pattern::parse(names);
  REQUIRE(alt);
  CHECK(alt->matches("main.(*Server).Handle299"));
  CHECK_FALSE(alt->matches("main.(*Server).Handle300"));
}
