#include "probe/pattern.hpp"

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

namespace {

// Regular expressions that libstdc++'s std::regex mishandles, found by
// fuzzing (tests/fuzz/probe_spec/regressions/); nullptr when `re` is fine.
//  - A quantifier on a quantifier (`a**`, `a+{2}`): ECMAScript rejects it
//    ("nothing to repeat"), std::regex accepts it and its backtracking matcher
//    then takes time exponential in their number (`/S****...*./` hangs on a
//    short name). A single `?` after a quantifier is the lazy form, allowed.
//  - A repeat count or back-reference number past kMaxRepeat (`\7777777777777777777`,
//    `a{99999999999999999999}`): std::regex's parser overflows a signed
//    integer (undefined behaviour); repeat counts that do fit expand into one
//    NFA state per repetition.
constexpr unsigned long kMaxRepeat = 1000;

const char* unsupportedRegex(std::string_view re) {
  // Every number std::regex parses is a run of digits in the text, and its
  // parser overflows past 18 digits. Cap the runs whatever the tokens are:
  // the scan below does not tokenize like libstdc++ (`\c\\777...` reads there
  // as a control escape, then a back-reference), and fuzzing found the gap.
  size_t digits = 0;
  for (char c : re)
    if ((digits = (c >= '0' && c <= '9') ? digits + 1 : 0) > 9) return "a number over 9 digits";
  bool afterQuantifier = false, lazy = false, inClass = false;
  for (size_t i = 0; i < re.size(); i++) {
    char c = re[i];
    if (c == '\\') {
      // An escaped character is an atom; `\N` refers back to group N.
      unsigned long group = 0;
      for (size_t j = i + 1; j < re.size() && re[j] >= '0' && re[j] <= '9'; j++) {
        group = group * 10 + static_cast<unsigned long>(re[j] - '0');
        if (group > kMaxRepeat) return "a back-reference number over 1000";
      }
      // `\cX` is one atom (a control character) in libstdc++, whatever X is.
      i += (i + 1 < re.size() && re[i + 1] == 'c') ? 2 : 1;
      afterQuantifier = false;
    } else if (inClass) {
      inClass = c != ']';
    } else if (c == '[') {
      inClass = true;
      afterQuantifier = false;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (afterQuantifier) {
        if (c != '?' || lazy) return "a quantifier on a quantifier";
        lazy = true;
        continue;
      }
      if (c == '{') {
        auto close = re.find('}', i);
        if (close == std::string_view::npos) return nullptr;  // std::regex reports it
        unsigned long count = 0;
        for (size_t j = i + 1; j < close; j++) {
          if (re[j] < '0' || re[j] > '9') {
            count = 0;  // the next number of `{n,m}`
            continue;
          }
          count = count * 10 + static_cast<unsigned long>(re[j] - '0');
          if (count > kMaxRepeat) return "a repeat count over 1000";
        }
        i = close;
      }
      afterQuantifier = true;
      lazy = false;
    } else {
      afterQuantifier = false;
    }
  }
  return nullptr;
}

}  // namespace

Result<Pattern> Pattern::parse(std::string_view text) {
  Pattern p;
  p.text_ = std::string(text);
  if (text.empty()) return fail(ErrorKind::Usage, "empty function pattern");
  if (text.size() >= 2 && text.front() == '/' && text.back() == '/') {
    if (const char* why = unsupportedRegex(text.substr(1, text.size() - 2)))
      return fail(ErrorKind::Usage, "bad regular expression " + p.text_ + ": " + why);
    try {
      p.regex_ = std::make_shared<std::regex>(std::string(text.substr(1, text.size() - 2)),
                                              std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return fail(ErrorKind::Usage, "bad regular expression " + p.text_ + ": " + e.what());
    }
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
      return std::regex_search(name.begin(), name.end(), *regex_);
  }
  return false;
}

}  // namespace goscope
