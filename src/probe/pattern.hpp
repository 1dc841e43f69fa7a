// Function-name patterns as users type them: a glob (`main.*`, `runtime.gc*`)
// or a regular expression between slashes (`/^main\.\(\*Server\)/`, RE2 syntax).
//
// Only `*` and `?` are wildcards in a glob: Go names are full of brackets and
// parentheses (`main.(*Server).Handle`, `main.Map[...]`) that must match
// themselves. A glob also matches the name as Go prints it in stack traces,
// where the type arguments of a generic instantiation read `[...]`.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace re2 {
class RE2;
}

namespace goscope {

class Pattern {
 public:
  static Result<Pattern> parse(std::string_view text);

  bool matches(std::string_view funcName) const;
  const std::string& text() const { return text_; }
  bool isLiteral() const { return kind_ == Kind::Literal; }

 private:
  enum class Kind { Literal, Glob, Regex };
  Kind kind_ = Kind::Literal;
  std::string text_;
  std::shared_ptr<const re2::RE2> regex_;  // Kind::Regex (RE2: linear-time matching)
};

bool globMatch(std::string_view pattern, std::string_view text);

// `main.Map[go.shape.int_0,go.shape.string_1]` -> `main.Map[...]`, as the Go
// runtime prints generic instantiations (runtime.funcNameForPrint).
std::string goPrintName(std::string_view name);

}  // namespace goscope
