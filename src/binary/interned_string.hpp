// A string kept once for the whole process, shared by every value that holds
// it: the callee, call file and reason of each inlined body (start-up
// memory). buf has 97,891 bodies; their callees, files and the
// common reasons repeat thousands of times (runtime.add, internal/abi's
// files, "the body's first instruction, passed once per call"), and three
// heap strings a body were ~30 MB of the peak heap of `count -b buf '*'`
// (docs/disassembly.md, "Start-up").
//
// A value is one pointer: copying it copies no text, and the text is never
// freed (a process looks at a handful of binaries; the pool holds each
// distinct string of theirs once). Interning is thread-safe: the searches
// make bodies on every CPU.
#pragma once

#include <compare>
#include <concepts>
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace goscope {

class InternedString {
 public:
  InternedString();  // ""
  InternedString(std::string_view s);  // NOLINT: implicit, as the std::string it stands in for
  InternedString(const std::string& s) : InternedString(std::string_view(s)) {}  // NOLINT
  InternedString(const char* s) : InternedString(std::string_view(s)) {}  // NOLINT

  const std::string& str() const { return *s_; }
  std::string_view view() const { return *s_; }
  operator const std::string&() const { return *s_; }  // NOLINT
  operator std::string_view() const { return *s_; }  // NOLINT

  const char* c_str() const { return s_->c_str(); }
  const char* data() const { return s_->data(); }
  size_t size() const { return s_->size(); }
  bool empty() const { return s_->empty(); }
  bool starts_with(std::string_view p) const { return s_->starts_with(p); }
  bool ends_with(std::string_view p) const { return s_->ends_with(p); }
  size_t find(std::string_view p, size_t from = 0) const { return s_->find(p, from); }

  // One comparison taking a view: "x", a std::string and another
  // InternedString all reach it with one conversion (two overloads would
  // be ambiguous for a literal).
  friend bool operator==(const InternedString& a, std::string_view b) { return a.view() == b; }
  // Two interned: the same text is the same pointer. A template, so that a
  // literal never reaches it (it would be as good a match as the view's).
  template <class T>
    requires std::same_as<T, InternedString>
  friend bool operator==(const InternedString& a, const T& b) { return a.s_ == b.s_; }
  friend std::strong_ordering operator<=>(const InternedString& a, std::string_view b) {
    return a.view() <=> b;
  }

  friend std::string operator+(const InternedString& a, std::string_view b) {
    std::string out;
    out.reserve(a.size() + b.size());
    return out.append(a.view()).append(b);
  }
  friend std::string operator+(std::string a, const InternedString& b) { return a.append(b.view()); }
  friend std::string operator+(const char* a, const InternedString& b) { return std::string(a).append(b.view()); }
  friend std::ostream& operator<<(std::ostream& o, const InternedString& s) { return o << s.view(); }

 private:
  const std::string* s_;
};

}  // namespace goscope
