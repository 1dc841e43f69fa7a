#include "session/write_check.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace goscope::session {

namespace {

int bitsOf(const std::string& type) {
  if (type == "int8" || type == "uint8" || type == "byte") return 8;
  if (type == "int16" || type == "uint16") return 16;
  if (type == "int32" || type == "uint32" || type == "rune") return 32;
  return 64;  // int, uint, int64, uint64, uintptr, and named types (their size is not in Delve's reply)
}

bool isName(const std::string& v) {
  if (v.empty() || !(std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_')) return false;
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

// A Go integer literal: optional sign, 0x/0o/0b or leading-0 octal, `_`
// between digits. nullopt when it is not one; `magnitude` saturates at 2^64.
struct IntLiteral {
  bool negative = false;
  unsigned __int128 magnitude = 0;
};

std::optional<IntLiteral> intLiteral(const std::string& text) {
  IntLiteral lit;
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) lit.negative = text[i++] == '-';
  int base = 10;
  if (text.size() > i + 1 && text[i] == '0') {
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i + 1])));
    if (p == 'x') base = 16, i += 2;
    else if (p == 'o') base = 8, i += 2;
    else if (p == 'b') base = 2, i += 2;
    else base = 8, i += 1;
  }
  if (i >= text.size()) return base == 8 && text.back() == '0' ? std::optional<IntLiteral>(lit) : std::nullopt;
  const unsigned __int128 cap = static_cast<unsigned __int128>(1) << 64;
  bool digit = false;
  for (; i < text.size(); i++) {
    char c = text[i];
    if (c == '_') continue;
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : std::isxdigit(static_cast<unsigned char>(c)) ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                                                          : 99;
    if (d >= base) return std::nullopt;
    digit = true;
    lit.magnitude = lit.magnitude * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    if (lit.magnitude > cap) lit.magnitude = cap + 1;  // saturate: out of range anyway
  }
  if (!digit) return std::nullopt;
  return lit;
}

std::string rangeText(bool isSigned, int bits) {
  if (isSigned) {
    const __int128 lo = -(static_cast<__int128>(1) << (bits - 1));
    const __int128 hi = (static_cast<__int128>(1) << (bits - 1)) - 1;
    return std::to_string(static_cast<long long>(lo)) + " to " + std::to_string(static_cast<long long>(hi));
  }
  const unsigned __int128 hi = (static_cast<unsigned __int128>(1) << bits) - 1;
  return "0 to " + std::to_string(static_cast<unsigned long long>(hi));
}

}  // namespace

Result<std::optional<std::string>> checkWrite(WriteKind kind, const std::string& type, const std::string& value) {
  if (kind == WriteKind::Pointer) return std::optional<std::string>{};  // Delve checks the types
  if (kind == WriteKind::Other)
    return fail(ErrorKind::Usage, "a " + (type.empty() ? std::string("value of this kind") : type) +
                                      " cannot be assigned: Delve writes numbers, bools and pointers only");
  if (isName(value) && !(kind == WriteKind::Bool && (value == "true" || value == "false")))
    return std::optional<std::string>(value);
  switch (kind) {
    case WriteKind::Bool:
      if (value == "true" || value == "false") return std::optional<std::string>{};
      return fail(ErrorKind::Usage, "'" + value + "' is not a bool (true or false) or a variable name");
    case WriteKind::Float: {
      char* end = nullptr;
      double d = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(d))
        return fail(ErrorKind::Usage, "'" + value + "' is not a finite number literal or a variable name");
      if (type == "float32" && std::fabs(d) > 3.4028234663852886e38)
        return fail(ErrorKind::Usage, "'" + value + "' is out of range for float32");
      return std::optional<std::string>{};
    }
    default: {
      auto lit = intLiteral(value);
      if (!lit)
        return fail(ErrorKind::Usage, "'" + value + "' is not an integer literal or a variable name",
                    "expressions are not written: Delve would convert their result silently");
      const int bits = bitsOf(type);
      const bool isSigned = kind == WriteKind::Signed;
      const unsigned __int128 limit = isSigned ? (static_cast<unsigned __int128>(1) << (bits - 1)) - (lit->negative ? 0 : 1)
                                               : (static_cast<unsigned __int128>(1) << bits) - 1;
      if ((!isSigned && lit->negative && lit->magnitude != 0) || lit->magnitude > limit)
        return fail(ErrorKind::Usage, value + " is out of range for " + (type.empty() ? "this integer" : type) + " (" +
                                          rangeText(isSigned, bits) + ")");
      return std::optional<std::string>{};
    }
  }
}

}  // namespace goscope::session
