#include "probe/pattern.hpp"

#include <re2/re2.h>

namespace goscope {

bool globMatch(std::string_view p, std::string_view t) {
  // Iterative matcher with one backtrack point: linear in practice, no
  // recursion to blow up on long names full of stars.
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      pi++;
      ti++;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') pi++;
  return pi == p.size();
}

std::string goPrintName(std::string_view name) {
  auto open = name.find('[');
  if (open == std::string_view::npos) return std::string(name);
  // Find the bracket that closes the first one, allowing nesting.
  int depth = 0;
  for (size_t i = open; i < name.size(); i++) {
    if (name[i] == '[') depth++;
    else if (name[i] == ']' && --depth == 0) {
      std::string out(name.substr(0, open));
      out += "[...]";
      out += goPrintName(name.substr(i + 1));
      return out;
    }
  }
  return std::string(name);
}

Result<Pattern> Pattern::parse(std::string_view text) {
  Pattern p;
  p.text_ = std::string(text);
  if (text.empty()) return fail(ErrorKind::Usage, "empty function pattern");
  if (text.size() >= 2 && text.front() == '/' && text.back() == '/') {
    // RE2: matching takes time linear in the name whatever the expression
    // (std::regex backtracked exponentially on `/(.*)*Z/` and overflowed its
    // stack on deep nesting); what RE2 cannot do in bounded time and memory
    // (back-references, nesting past its limit, huge repeat counts) is a
    // clear error instead.
    re2::RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(8 << 20);
    const std::string expr(text.substr(1, text.size() - 2));
    auto re = std::make_shared<const re2::RE2>(expr, options);
    if (!re->ok()) return fail(ErrorKind::Usage, "bad regular expression " + p.text_ + ": " + re->error());
    // A program this large does not fit RE2's DFA in max_mem, and every
    // name is then matched by its NFA, thousands of steps per character
    // (thousands of nested groups took seconds against one binary's names).
    // A pattern of names stays far below: RE2 factors an alternation of
    // hundreds of names into a few dozen instructions.
    constexpr int kMaxProgram = 10000;
    if (re->ProgramSize() > kMaxProgram)
      return fail(ErrorKind::Usage,
                  "regular expression too complex: it compiles to " + std::to_string(re->ProgramSize()) +
                      " instructions, more than " + std::to_string(kMaxProgram),
                  "simplify it (a pattern of function names needs far fewer)");
    p.regex_ = std::move(re);
    p.kind_ = Kind::Regex;
  } else if (text.find_first_of("*?") != std::string_view::npos) {
    p.kind_ = Kind::Glob;
  }
  return p;
}

bool Pattern::matches(std::string_view name) const {
  switch (kind_) {
    case Kind::Literal:
      return name == text_ || (name.find('[') != std::string_view::npos && goPrintName(name) == text_);
    case Kind::Glob:
      return globMatch(text_, name) || (name.find('[') != std::string_view::npos && globMatch(text_, goPrintName(name)));
    case Kind::Regex:
      return re2::RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *regex_);
  }
  return false;
}

}  // namespace goscope
