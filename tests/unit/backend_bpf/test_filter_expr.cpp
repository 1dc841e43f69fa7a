// --filter: parsing, binding to a function's argument layout (from a user
// signature: the same layouts DWARF gives), the Delve condition, and the
// kernel-side encoding (bpf/goscope_shared.h).
#include <doctest/doctest.h>

#include "backend/bpf/probe_config.hpp"
#include "probe/abi_layout.hpp"
#include "probe/filter_expr.hpp"

using namespace goscope;

namespace {

FilterExpr parsed(std::string_view text) {
  auto f = parseFilter(text);
  REQUIRE_MESSAGE(f, (f ? "" : f.error().message));
  return *f;
}

std::string parseError(std::string_view text) {
  auto f = parseFilter(text);
  REQUIRE_FALSE(f);
  CHECK(f.error().kind == ErrorKind::Usage);
  CHECK(f.error().message.find('\n') == std::string::npos);  // one line
  CHECK(f.error().message.rfind("filter: ", 0) == 0);
  return f.error().message;
}

std::vector<ValueLayout> layoutOf(std::string_view sig) {
  auto l = layoutFromSignature(sig);
  REQUIRE_MESSAGE(l, (l ? "" : l.error().message));
  return *l;
}

std::string bindError(std::string_view filter, std::string_view sig) {
  auto b = bindFilter(parsed(filter), layoutOf(sig), "main.f");
  REQUIRE_FALSE(b);
  CHECK(b.error().kind == ErrorKind::Usage);
  return b.error().message;
}

}  // namespace

TEST_CASE("filter parse: integer comparisons, strings, prefixes, && of terms") {
  auto f = parsed("n > 40");
  REQUIRE(f.terms.size() == 1);
  CHECK(f.terms[0].arg == "n");
  CHECK(f.terms[0].op == FilterOp::Gt);
  CHECK_FALSE(f.terms[0].isString);
  CHECK(f.terms[0].magnitude == 40);
  CHECK_FALSE(f.terms[0].negative);

  f = parsed(R"(name == "api" && n<=-7 && x != 0x1F && s =~ "/v1/*")");
  REQUIRE(f.terms.size() == 4);
  CHECK(f.terms[0].isString);
  CHECK(f.terms[0].text == "api");
  CHECK(f.terms[1].op == FilterOp::Le);
  CHECK(f.terms[1].negative);
  CHECK(f.terms[1].magnitude == 7);
  CHECK(f.terms[2].op == FilterOp::Ne);
  CHECK(f.terms[2].magnitude == 31);
  CHECK(f.terms[3].op == FilterOp::Prefix);
  CHECK(f.terms[3].text == "/v1/");  // without the '*'
  CHECK(f.hasPrefix());
  CHECK_FALSE(parsed("a < 1 && b >= 2").hasPrefix());

  CHECK(parsed(R"(s == "a\"b\\c")").terms[0].text == "a\"b\\c");
  CHECK(parsed(R"(s == "")").terms[0].text.empty());
  CHECK(parsed("s =~ \"*\"").terms[0].text.empty());  // every string
  CHECK(parsed("  n   >=   18446744073709551615 ").terms[0].magnitude == UINT64_MAX);
}

TEST_CASE("filter parse: one-line errors for what the grammar does not have") {
  CHECK(parseError("").find("empty") != std::string::npos);
  CHECK(parseError("a > 1 || b > 2").find("`||` is not supported") != std::string::npos);
  CHECK(parseError("(a > 1)").find("parentheses") != std::string::npos);
  CHECK(parseError("a ~ 1").find("unsupported operator `~`") != std::string::npos);
  CHECK(parseError("a = 1").find("unsupported operator `=`") != std::string::npos);
  CHECK(parseError("a 1").find("an operator is missing") != std::string::npos);
  CHECK(parseError("a >").find("a value is missing") != std::string::npos);
  CHECK(parseError("a > x").find("expected a number") != std::string::npos);
  CHECK(parseError("a > 1.5").find("`1.5` is not an integer") != std::string::npos);
  CHECK(parseError("a > 99999999999999999999").find("64 bits") != std::string::npos);
  CHECK(parseError("s == \"open").find("not closed") != std::string::npos);
  CHECK(parseError("s =~ \"api\"").find("ends in its only `*`") != std::string::npos);
  CHECK(parseError("s =~ \"a*b*\"").find("ends in its only `*`") != std::string::npos);
  CHECK(parseError("n =~ 4").find("quoted prefix") != std::string::npos);
  CHECK(parseError("r.Name == \"x\"").find("fields") != std::string::npos);
  CHECK(parseError("a > 1 b").find("unexpected") != std::string::npos);
  CHECK(parseError("a>1 && b>1 && c>1 && d>1 && e>1").find("at most 4") != std::string::npos);
  CHECK(parseError("s == \"" + std::string(33, 'x') + "\"").find("at most 32") != std::string::npos);
}

TEST_CASE("filter bind: registers, signedness and sizes from the argument layout") {
  const auto layout = layoutOf("main.f(name string, n int, u uint8, k int16) bool");
  auto b = bindFilter(parsed(R"(name == "api" && n > -3 && u <= 200 && k != -1)"), layout, "main.f");
  REQUIRE_MESSAGE(b, (b ? "" : b.error().message));
  REQUIRE(b->size() == 4);
  const auto& s = (*b)[0];
  CHECK(s.kind == BoundFilterTerm::Kind::String);
  CHECK(s.reg == 0);     // RAX: the pointer
  CHECK(s.lenReg == 1);  // RBX: the length
  CHECK(s.text == "api");
  const auto& n = (*b)[1];
  CHECK(n.kind == BoundFilterTerm::Kind::Signed);
  CHECK(n.reg == 2);  // RCX
  CHECK(n.size == 8);
  CHECK(n.value == static_cast<uint64_t>(-3));
  const auto& u = (*b)[2];
  CHECK(u.kind == BoundFilterTerm::Kind::Unsigned);
  CHECK(u.reg == 3);  // RDI
  CHECK(u.size == 1);
  CHECK(u.value == 200);
  const auto& k = (*b)[3];
  CHECK(k.kind == BoundFilterTerm::Kind::Signed);
  CHECK(k.size == 2);
  CHECK(k.value == UINT64_MAX);  // -1, sign-extended to 64 bits as the kernel extends the register
}

TEST_CASE("filter bind: unknown names, results, type mismatches, ranges") {
  const std::string sig = "main.f(name string, n int, u uint8, ok bool, p *int) int";
  auto unknown = bindError("count > 1", sig);
  CHECK(unknown.find("main.f has no argument `count`") != std::string::npos);
  CHECK(unknown.find("name string, n int, u uint8, ok bool, p *int") != std::string::npos);
  CHECK(bindError("name > 1", sig).find("is a string: compare it with a \"quoted string\"") != std::string::npos);
  CHECK(bindError("name < \"b\"", sig).find("its operators are == != and =~") != std::string::npos);
  CHECK(bindError("n == \"40\"", sig).find("is an integer: compare it with a number") != std::string::npos);
  CHECK(bindError("n =~ \"4*\"", sig).find("is an integer") != std::string::npos);
  CHECK(bindError("u > 256", sig).find("outside the range") != std::string::npos);
  CHECK(bindError("u > -1", sig).find("unsigned") != std::string::npos);
  CHECK(bindError("ok == 1", sig).find("only integer and string arguments") != std::string::npos);
  CHECK(bindError("p == 0", sig).find("only integer and string arguments") != std::string::npos);
  CHECK(bindFilter(parsed("n >= -9223372036854775808"), layoutOf(sig), "main.f"));
  CHECK_FALSE(bindFilter(parsed("n >= 9223372036854775808"), layoutOf(sig), "main.f"));
}

TEST_CASE("filter bind: a result's name is refused (filters test arguments at the entry)") {
  auto b = bindFilter(parsed("err == 0"), layoutOf("main.f(n int) (r int, err int)"), "main.f");
  REQUIRE_FALSE(b);
  CHECK(b.error().message.find("`err` is a result of main.f") != std::string::npos);
}

TEST_CASE("filter bind: a string passed on the stack is read from its header at RSP+offset") {
  // Nine integer registers taken: the string goes on the stack (ABIInternal).
  const auto layout = layoutOf("main.f(a, b, c, d, e, f, g, h int, s string, i int)");
  auto b = bindFilter(parsed(R"(s == "x" && i > 0)"), layout, "main.f");
  REQUIRE_MESSAGE(b, (b ? "" : b.error().message));
  CHECK((*b)[0].onStack);
  CHECK((*b)[0].stackOffset == 8);  // the first stack argument, above the return address
  CHECK_FALSE((*b)[1].onStack);
  CHECK((*b)[1].reg == 8);  // i still fits R11
}

TEST_CASE("filter as a Delve condition: Go syntax, prefixes refused with a reason") {
  auto c = delveCondition(parsed(R"(n > 40 && name == "a\"pi" && k >= -2)"));
  REQUIRE(c);
  CHECK(*c == R"(n > 40 && name == "a\"pi" && k >= -2)");
  auto p = delveCondition(parsed(R"(name =~ "api*")"));
  REQUIRE_FALSE(p);
  CHECK(p.error().message.find("prefix") != std::string::npos);
  CHECK(p.error().message.find("strings.HasPrefix") != std::string::npos);
}

TEST_CASE("filter encoding: the kernel's conditions") {
  auto b = bindFilter(parsed(R"(name =~ "ap*" && n < 5)"), layoutOf("main.f(name string, n int32)"), "main.f");
  REQUIRE(b);
  auto f = bpf::encodeFilter(*b);
  REQUIRE(f);
  CHECK(f->nconds == 2);
  CHECK(f->conds[0].kind == GS_FK_STRING);
  CHECK(f->conds[0].op == GS_OP_PREFIX);
  CHECK(f->conds[0].base == GS_REG_RAX);
  CHECK(f->conds[0].len_reg == GS_REG_RBX);
  CHECK(f->conds[0].str_len == 2);
  CHECK(f->conds[0].str[0] == 'a');
  CHECK(f->conds[0].str[1] == 'p');
  CHECK(f->conds[1].kind == GS_FK_SIGNED);
  CHECK(f->conds[1].op == GS_OP_LT);
  CHECK(f->conds[1].base == GS_REG_RCX);
  CHECK(f->conds[1].size == 4);
  CHECK(f->conds[1].value == 5);
  CHECK_FALSE(bpf::encodeFilter({}));

  bpf::ProbeConfig cfg;
  cfg.count = true;
  CHECK(bpf::encodeActions(cfg) == GS_ACT_COUNT);
  cfg.filter = *b;
  CHECK(bpf::encodeActions(cfg) == (GS_ACT_COUNT | GS_ACT_FILTER));
  cfg.countMatching = true;
  CHECK(bpf::encodeActions(cfg) == (GS_ACT_COUNT | GS_ACT_FILTER | GS_ACT_COUNT_MATCHING));
}
