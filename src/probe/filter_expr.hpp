// `--filter EXPR` (trace, count): which calls matter, tested on the
// arguments at the function's entry. The grammar is kept small enough for
// the kernel to evaluate it with a short bounded loop (bpf/goscope.bpf.c,
// filter_passes):
//
//   expr  := term ('&&' term)*            at most kMaxFilterTerms terms
//   term  := NAME op CONST
//   op    := '==' '!=' '<' '<=' '>' '>='  (integers: signed or unsigned as
//            the argument's Go type is; strings: '==' '!=')
//          | '=~'                         (strings: a prefix, "api*"; the
//            trailing '*' is required and is the only wildcard)
//   CONST := decimal or 0x hex integer, optionally negative
//          | "double-quoted string" (escapes \" \\ \n \t), at most
//            kMaxFilterString bytes
//
// NAME is an argument's name as trace prints it (from DWARF, or from a user
// signature). `||`, parentheses, results, fields and other kinds (bool,
// float, pointers, structs) are refused with one line saying so
// (docs/errors.md, "filter").
//
// Parsing is pure; binding to one function's argument layout (where each
// argument is at the entry, abi_layout.hpp) says where the kernel finds it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "probe/abi_layout.hpp"
#include "util/result.hpp"

namespace goscope {

constexpr size_t kMaxFilterTerms = 4;    // GS_MAX_FILTER_CONDS
constexpr size_t kMaxFilterString = 32;  // GS_FILTER_STR

enum class FilterOp { Eq, Ne, Lt, Le, Gt, Ge, Prefix };
const char* filterOpText(FilterOp op);

struct FilterTerm {
  std::string arg;
  FilterOp op = FilterOp::Eq;
  bool isString = false;
  std::string text;       // isString: the bytes (for Prefix: without the '*')
  bool negative = false;  // integers: a '-' sign
  uint64_t magnitude = 0; // integers: the absolute value

  bool operator==(const FilterTerm&) const = default;
};

struct FilterExpr {
  std::string source;  // as the user wrote it
  std::vector<FilterTerm> terms;
  bool hasPrefix() const;
};

// Errors: Usage, one line naming what does not parse.
Result<FilterExpr> parseFilter(std::string_view text);

// The filter as a Go boolean expression for a Delve breakpoint condition
// (Delve's syntax is Go's): `n > 40 && name == "api"`. Errors (Usage): a
// prefix term, which Delve's conditions cannot say (no strings.HasPrefix).
Result<std::string> delveCondition(const FilterExpr& filter);

// Where the kernel finds one tested argument at the entry, and what it
// compares it with.
struct BoundFilterTerm {
  enum class Kind { Signed, Unsigned, String };
  Kind kind = Kind::Signed;
  FilterOp op = FilterOp::Eq;
  bool onStack = false;     // the value (or the string header) is in memory at RSP+stackOffset
  unsigned reg = 0;         // !onStack: the register (0 = RAX .. 8 = R11) of the value or the string's pointer
  unsigned lenReg = 0;      // strings in registers: the length's register
  int64_t stackOffset = 0;
  uint32_t size = 8;        // integers: 1, 2, 4 or 8 bytes
  uint64_t value = 0;       // integers: the constant, as 64 bits (two's complement when negative)
  std::string text;         // strings
};

// Binds every term to `func`'s argument layout. Errors (Usage): a name that
// is not an argument of `func` (the message lists its arguments), a result,
// an argument whose place is unknown, a kind the kernel cannot compare, a
// string constant for an integer argument or the reverse, an operator the
// kind does not have, a constant outside the argument type's range.
Result<std::vector<BoundFilterTerm>> bindFilter(const FilterExpr& filter, const std::vector<ValueLayout>& layout,
                                                const std::string& func);

}  // namespace goscope
