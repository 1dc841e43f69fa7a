#include "probe/filter_expr.hpp"

#include <cctype>
#include <limits>

namespace goscope {

const char* filterOpText(FilterOp op) {
  switch (op) {
    case FilterOp::Eq: return "==";
    case FilterOp::Ne: return "!=";
    case FilterOp::Lt: return "<";
    case FilterOp::Le: return "<=";
    case FilterOp::Gt: return ">";
    case FilterOp::Ge: return ">=";
    case FilterOp::Prefix: return "=~";
  }
  return "?";
}

bool FilterExpr::hasPrefix() const {
  for (const auto& t : terms)
    if (t.op == FilterOp::Prefix) return true;
  return false;
}

namespace {

const char* kGrammar = "a filter is NAME OP VALUE [&& ...], e.g. 'n > 40 && name == \"api\"'";

Failure bad(const std::string& what, std::string hint = kGrammar) {
  return fail(ErrorKind::Usage, "filter: " + what, std::move(hint));
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<FilterExpr> parse() {
    FilterExpr e;
    e.source = std::string(s_);
    for (;;) {
      auto t = term();
      if (!t) return t.failure();
      e.terms.push_back(std::move(*t));
      skipSpace();
      if (i_ == s_.size()) break;
      if (s_.substr(i_, 2) == "&&") {
        i_ += 2;
        continue;
      }
      if (s_.substr(i_, 2) == "||")
        return bad("`||` is not supported (only `&&`)", "run one session per alternative, or filter the output");
      return bad("unexpected `" + std::string(s_.substr(i_, 12)) + "` at position " + std::to_string(i_ + 1));
    }
    if (e.terms.size() > kMaxFilterTerms)
      return bad(std::to_string(e.terms.size()) + " comparisons; the kernel tests at most " +
                     std::to_string(kMaxFilterTerms),
                 "keep the most selective ones");
    return e;
  }

 private:
  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) i_++;
  }

  Result<FilterTerm> term() {
    FilterTerm t;
    skipSpace();
    if (i_ < s_.size() && s_[i_] == '(') return bad("parentheses are not supported: terms are joined by `&&` only");
    size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) i_++;
    if (i_ == start || std::isdigit(static_cast<unsigned char>(s_[start])))
      return bad(i_ == s_.size() && start == i_ ? "an argument name is missing at the end"
                                                : "expected an argument name at position " + std::to_string(start + 1));
    t.arg = std::string(s_.substr(start, i_ - start));
    if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == '['))
      return bad("`" + t.arg + s_[i_] + "...`: fields and elements are not supported, only whole arguments");
    skipSpace();
    auto op = oper(t.arg);
    if (!op) return op.failure();
    t.op = *op;
    skipSpace();
    if (i_ == s_.size()) return bad("a value is missing after `" + t.arg + " " + filterOpText(t.op) + "`");
    if (s_[i_] == '"') {
      auto str = quoted();
      if (!str) return str.failure();
      t.isString = true;
      t.text = std::move(*str);
      if (t.op == FilterOp::Prefix) {
        if (t.text.empty() || t.text.back() != '*' || t.text.find('*') != t.text.size() - 1)
          return bad("`=~ \"" + t.text + "\"`: a prefix pattern ends in its only `*`, e.g. `name =~ \"api*\"`");
        t.text.pop_back();
      }
      if (t.text.size() > kMaxFilterString)
        return bad("the string \"" + t.text + "\" has " + std::to_string(t.text.size()) + " bytes; the kernel compares at most " +
                       std::to_string(kMaxFilterString),
                   "compare a prefix of it: name =~ \"...*\"");
      return t;
    }
    if (t.op == FilterOp::Prefix) return bad("`=~` takes a quoted prefix pattern, e.g. `" + t.arg + " =~ \"api*\"`");
    if (auto n = integer(t); !n) return n.failure();
    return t;
  }

  Result<FilterOp> oper(const std::string& arg) {
    static const std::pair<const char*, FilterOp> ops[] = {
        {"==", FilterOp::Eq}, {"!=", FilterOp::Ne}, {"<=", FilterOp::Le}, {">=", FilterOp::Ge},
        {"=~", FilterOp::Prefix}, {"<", FilterOp::Lt}, {">", FilterOp::Gt}};
    for (const auto& [text, op] : ops) {
      std::string_view t(text);
      if (s_.substr(i_, t.size()) == t) {
        i_ += t.size();
        return op;
      }
    }
    size_t start = i_;
    while (i_ < s_.size() && std::ispunct(static_cast<unsigned char>(s_[i_])) && s_[i_] != '"' && s_[i_] != '-') i_++;
    std::string got(s_.substr(start, i_ - start));
    if (got.empty()) return bad("an operator is missing after `" + arg + "`");
    return bad("unsupported operator `" + got + "` after `" + arg + "`: use == != < <= > >= (or =~ \"prefix*\" for strings)");
  }

  Result<std::string> quoted() {
    std::string out;
    size_t open = i_++;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ == s_.size()) break;
        char e = s_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          default: return bad(std::string("unknown escape `\\") + e + "` in a string (known: \\\" \\\\ \\n \\t)");
        }
        continue;
      }
      out += c;
    }
    if (i_ == s_.size()) return bad("the string opened at position " + std::to_string(open + 1) + " is not closed");
    i_++;
    return out;
  }

  // The term's integer constant; called with i_ at its first character.
  Result<void> integer(FilterTerm& t) {
    if (s_[i_] == '-') {
      t.negative = true;
      i_++;
    }
    int base = 10;
    if (s_.substr(i_, 2) == "0x" || s_.substr(i_, 2) == "0X") {
      base = 16;
      i_ += 2;
    }
    size_t start = i_;
    uint64_t v = 0;
    for (; i_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[i_])); i_++) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[i_])));
      const unsigned d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : c - 'a' + 10;
      if (d >= static_cast<unsigned>(base)) break;
      if (v > (std::numeric_limits<uint64_t>::max() - d) / base) return bad("the number at position " + std::to_string(start + 1) + " does not fit 64 bits");
      v = v * base + d;
    }
    if (i_ == start) {
      size_t end = i_;
      while (end < s_.size() && !std::isspace(static_cast<unsigned char>(s_[end]))) end++;
      return bad("expected a number or a \"quoted string\", not `" + std::string(s_.substr(start, end - start)) + "`");
    }
    if (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == '_')) {
      size_t end = i_;
      while (end < s_.size() && !std::isspace(static_cast<unsigned char>(s_[end])) && s_[end] != '&') end++;
      return bad("`" + std::string(s_.substr(start, end - start)) + "` is not an integer (floats and names are not compared)");
    }
    t.magnitude = v;
    return {};
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool isSignedKind(GoType::Kind k) {
  using K = GoType::Kind;
  return k == K::Int || k == K::Int8 || k == K::Int16 || k == K::Int32 || k == K::Int64;
}
bool isUnsignedKind(GoType::Kind k) {
  using K = GoType::Kind;
  return k == K::Uint || k == K::Uint8 || k == K::Uint16 || k == K::Uint32 || k == K::Uint64 || k == K::Uintptr;
}

std::string argumentList(const std::vector<ValueLayout>& layout) {
  std::string out;
  for (const auto& v : layout) {
    if (v.isResult || v.name.empty() || v.name[0] == '.' || v.name == "_") continue;
    if (!out.empty()) out += ", ";
    out += v.name + " " + v.type;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

Result<FilterExpr> parseFilter(std::string_view text) {
  size_t nonSpace = text.find_first_not_of(" \t\n");
  if (nonSpace == std::string_view::npos) return bad("the expression is empty");
  Parser p(text);
  return p.parse();
}

namespace {

// The length of the valid UTF-8 sequence at s[i] (1-4), or 0.
size_t utf8Length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return 0;
  return n;
}

}  // namespace

Result<std::string> delveCondition(const FilterExpr& filter) {
  std::string out;
  for (const FilterTerm& t : filter.terms) {
    if (t.op == FilterOp::Prefix)
      return bad("`" + t.arg + " =~ \"" + t.text + "*\"` is a prefix test, which a Delve condition cannot make "
                 "(no strings.HasPrefix in dlv)",
                 "drop --strategy delve: BPF tests prefixes in the kernel");
    if (!out.empty()) out += " && ";
    out += t.arg + " " + filterOpText(t.op) + " ";
    if (t.isString) {
      out += '"';
      const std::string& s = t.text;
      for (size_t i = 0; i < s.size(); i++) {
        const auto b = static_cast<unsigned char>(s[i]);
        switch (s[i]) {
          case '"': out += "\\\""; break;
          case '\\': out += "\\\\"; break;
          case '\n': out += "\\n"; break;
          case '\t': out += "\\t"; break;
          default: {
            // Valid UTF-8 as it is; any other byte outside printable ASCII
            // as \xNN, which is that one byte: Go's scanner (Delve parses
            // conditions with go/parser) refuses invalid UTF-8 in a literal,
            // and the condition must match the bytes whatever they are.
            const size_t n = utf8Length(s, i);
            if (b >= 0x80 && n > 0) {
              out.append(s, i, n);
              i += n - 1;
            } else if (b < 0x20 || b >= 0x7f) {
              static constexpr char kHex[] = "0123456789abcdef";
              out += "\\x";
              out += kHex[b >> 4];
              out += kHex[b & 15];
            } else {
              out += s[i];
            }
          }
        }
      }
      out += '"';
    } else {
      out += (t.negative ? "-" : "") + std::to_string(t.magnitude);
    }
  }
  return out;
}

Result<std::vector<BoundFilterTerm>> bindFilter(const FilterExpr& filter, const std::vector<ValueLayout>& layout,
                                                const std::string& func) {
  std::vector<BoundFilterTerm> out;
  for (const FilterTerm& t : filter.terms) {
    const ValueLayout* v = nullptr;
    for (const auto& l : layout)
      if (l.name == t.arg) v = &l;
    if (!v)
      return bad(func + " has no argument `" + t.arg + "` (its arguments: " + argumentList(layout) + ")",
                 "name an argument as trace prints it");
    if (v->isResult)
      return bad("`" + t.arg + "` is a result of " + func + ": filters test arguments at the entry");
    if (!v->problem.empty() || !v->shape)
      return bad("the place of " + func + "'s argument `" + t.arg + "` is unknown (" + v->problem + ")");
    const GoType::Kind kind = v->shape->kind;
    const std::string what = "`" + t.arg + "` (" + v->type + ")";
    BoundFilterTerm b;
    b.op = t.op;
    b.onStack = v->onStack;
    if (v->onStack) {
      if (v->parts.empty()) return bad("the place of " + func + "'s argument `" + t.arg + "` is unknown");
      b.stackOffset = v->parts[0].stackOffset;
    }
    if (kind == GoType::Kind::String) {
      if (!t.isString) return bad(what + " is a string: compare it with a \"quoted string\"");
      if (t.op != FilterOp::Eq && t.op != FilterOp::Ne && t.op != FilterOp::Prefix)
        return bad(what + " is a string: its operators are == != and =~ \"prefix*\", not " + filterOpText(t.op));
      b.kind = BoundFilterTerm::Kind::String;
      b.text = t.text;
      if (!v->onStack) {
        if (v->parts.size() != 2) return bad("the registers of " + func + "'s argument `" + t.arg + "` are unknown");
        b.reg = v->parts[0].reg;
        b.lenReg = v->parts[1].reg;
      }
    } else if (isSignedKind(kind) || isUnsignedKind(kind)) {
      if (t.isString) return bad(what + " is an integer: compare it with a number, not \"" + t.text + "\"");
      if (t.op == FilterOp::Prefix) return bad(what + " is an integer: =~ compares string prefixes");
      const bool isSigned = isSignedKind(kind);
      b.kind = isSigned ? BoundFilterTerm::Kind::Signed : BoundFilterTerm::Kind::Unsigned;
      b.size = static_cast<uint32_t>(v->shape->size);
      if (b.size != 1 && b.size != 2 && b.size != 4 && b.size != 8)
        return bad(what + " has " + std::to_string(b.size) + " bytes, not an integer size the kernel compares");
      if (!v->onStack) {
        if (v->parts.size() != 1 || v->parts[0].kind != ValuePart::IntReg)
          return bad("the register of " + func + "'s argument `" + t.arg + "` is unknown");
        b.reg = v->parts[0].reg;
      }
      const unsigned bits = b.size * 8;
      const std::string constant = (t.negative ? "-" : "") + std::to_string(t.magnitude);
      if (isSigned) {
        const uint64_t maxPos = (uint64_t{1} << (bits - 1)) - 1;
        if (t.negative ? t.magnitude > maxPos + 1 : t.magnitude > maxPos)
          return bad(constant + " is outside the range of " + what);
      } else {
        if (t.negative && t.magnitude != 0) return bad(what + " is unsigned: " + constant + " is never one of its values");
        if (bits < 64 && t.magnitude >> bits) return bad(constant + " is outside the range of " + what);
      }
      b.value = t.negative ? ~t.magnitude + 1 : t.magnitude;
    } else {
      return bad(what + ": only integer and string arguments are compared in the kernel");
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace goscope
