#include "backend/delve/value_render.hpp"

#include "output/go_quote.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace goscope::delve {

namespace {

using rpc::GoKind;
using rpc::Variable;

GoKind kindOf(const Variable& v) { return static_cast<GoKind>(v.kind); }

// Delve 1.20.2 reports every signed integer as Int and every unsigned one as
// Uint (measured); the other kinds are accepted too in case a version does not.
bool isSigned(GoKind k) { return k >= GoKind::Int && k <= GoKind::Int64; }
bool isUnsigned(GoKind k) { return k >= GoKind::Uint && k <= GoKind::Uintptr; }
bool isFloat(GoKind k) { return k == GoKind::Float32 || k == GoKind::Float64; }
bool isComplex(GoKind k) { return k == GoKind::Complex64 || k == GoKind::Complex128; }

bool isNilPointer(const Variable& v) { return v.value.empty() || v.value == "0"; }

// An interface's dynamic value, or nullptr for a nil interface (Delve gives
// it one child of kind Invalid, type "void", at address 0).
const Variable* dynamicValue(const Variable& v) {
  if (v.children.empty()) return nullptr;
  const Variable& d = v.children[0];
  if (kindOf(d) == GoKind::Invalid && d.unreadable.empty()) return nullptr;
  return &d;
}

std::string hex(uint64_t x) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
  return buf;
}

uint64_t parseU64(const std::string& s) {
  uint64_t out = 0;
  std::from_chars(s.data(), s.data() + s.size(), out);
  return out;
}

// Elements Delve did not load (MaxArrayValues), as Delve's terminal says it.
std::string moreSuffix(int64_t total, size_t loaded, size_t perElement = 1) {
  int64_t missing = total - static_cast<int64_t>(loaded / perElement);
  return missing > 0 ? "...+" + std::to_string(missing) + " more" : "";
}

std::string childField(const Variable& v, const char* name) {
  for (const auto& c : v.children)
    if (c.name == name) return c.value;
  return "0";
}

std::string text(const Variable& v, bool top);

std::string listText(const Variable& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.children.size(); ++i) out += (i ? ", " : "") + text(v.children[i], false);
  std::string more = moreSuffix(v.len, v.children.size());
  if (!more.empty()) out += (v.children.empty() ? "" : ", ") + more;
  return out + "]";
}

std::string text(const Variable& v, bool top) {
  if (!v.unreadable.empty()) return "(unreadable: " + v.unreadable + ")";
  const GoKind k = kindOf(v);
  switch (k) {
    case GoKind::String: {
      std::string s = quoteGo(v.value);
      if (v.len > static_cast<int64_t>(v.value.size())) s += "...+" + std::to_string(v.len - v.value.size()) + " more";
      return s;
    }
    case GoKind::Array: return listText(v);
    case GoKind::Slice:
      if (v.base == 0 && v.len == 0) return "nil";
      return "len: " + std::to_string(v.len) + ", cap: " + std::to_string(v.cap) + ", " + listText(v);
    case GoKind::Map: {
      if (v.base == 0 && v.len == 0) return "nil";
      std::string out = "len: " + std::to_string(v.len) + ", [";
      for (size_t i = 0; i + 1 < v.children.size(); i += 2)
        out += (i ? ", " : "") + text(v.children[i], false) + ": " + text(v.children[i + 1], false);
      std::string more = moreSuffix(v.len, v.children.size(), 2);
      if (!more.empty()) out += (v.children.empty() ? "" : ", ") + more;
      return out + "]";
    }
    case GoKind::Struct: {
      if (v.children.empty() && v.len > 0) return "{...}";  // past the recursion limit
      std::string out = "{";
      for (size_t i = 0; i < v.children.size(); ++i)
        out += (i ? ", " : "") + v.children[i].name + ": " + text(v.children[i], false);
      return out + "}";
    }
    case GoKind::Pointer:
      if (v.type == "unsafe.Pointer") return "unsafe.Pointer(" + hex(parseU64(v.value)) + ")";
      if (isNilPointer(v)) return "nil";
      if (v.children.empty()) return "(" + v.type + ")(" + hex(parseU64(v.value)) + ")";  // not followed
      return "*" + text(v.children[0], false);
    case GoKind::Interface: {
      const Variable* d = dynamicValue(v);
      if (!d) return "nil";
      // Delve's own form: the interface type, the dynamic type, the value.
      return (top ? v.type : std::string()) + "(" + typeName(*d) + ") " + text(*d, false);
    }
    case GoKind::Chan:
      if (v.children.empty()) return "nil";
      return "len: " + childField(v, "qcount") + ", cap: " + childField(v, "dataqsiz");
    case GoKind::Func: return v.value.empty() ? "nil" : v.value;
    case GoKind::UnsafePointer: return "unsafe.Pointer(" + hex(parseU64(v.value)) + ")";
    default: return v.value.empty() ? "?" : v.value;  // numbers, bools, complex: Delve's text is Go's
  }
}

boost::json::value number(const Variable& v) {
  const GoKind k = kindOf(v);
  const char* b = v.value.data();
  const char* e = b + v.value.size();
  if (isSigned(k)) {
    int64_t x = 0;
    if (auto [p, ec] = std::from_chars(b, e, x); ec == std::errc() && p == e) return x;
  } else if (isUnsigned(k)) {
    uint64_t x = 0;
    if (auto [p, ec] = std::from_chars(b, e, x); ec == std::errc() && p == e) return x;
  } else if (isFloat(k)) {
    try {
      size_t used = 0;
      double d = std::stod(v.value, &used);
      if (used == v.value.size() && std::isfinite(d)) return d;
    } catch (...) {
    }
  }
  return boost::json::string(v.value);  // +Inf, NaN, complex: JSON has no number for them
}

}  // namespace

std::string valueText(const rpc::Variable& v) { return text(v, true); }

boost::json::value valueJson(const rpc::Variable& v) {
  if (!v.unreadable.empty()) return nullptr;
  const GoKind k = kindOf(v);
  switch (k) {
    case GoKind::Bool: return v.value == "true";
    case GoKind::String: return boost::json::string(v.value);
    case GoKind::Array:
    case GoKind::Slice: {
      if (k == GoKind::Slice && v.base == 0 && v.len == 0) return nullptr;
      boost::json::array a;
      for (const auto& c : v.children) a.push_back(valueJson(c));
      return a;
    }
    case GoKind::Map: {
      if (v.base == 0 && v.len == 0) return nullptr;
      boost::json::object o;
      for (size_t i = 0; i + 1 < v.children.size(); i += 2) {
        const Variable& key = v.children[i];
        o[kindOf(key) == GoKind::String ? key.value : text(key, false)] = valueJson(v.children[i + 1]);
      }
      return o;
    }
    case GoKind::Struct: {
      // Past the recursion limit: the text form, not null, which would say nil.
      if (v.children.empty() && v.len > 0) return boost::json::string("{...}");
      boost::json::object o;
      for (const auto& c : v.children) o[c.name] = valueJson(c);
      return o;
    }
    case GoKind::Pointer:
      if (v.type == "unsafe.Pointer") return parseU64(v.value);
      if (isNilPointer(v) || v.children.empty()) return nullptr;
      return valueJson(v.children[0]);
    case GoKind::Interface: {
      const Variable* d = dynamicValue(v);
      return d ? valueJson(*d) : boost::json::value(nullptr);
    }
    case GoKind::Chan:
      if (v.children.empty()) return nullptr;
      return boost::json::object{{"len", parseU64(childField(v, "qcount"))}, {"cap", parseU64(childField(v, "dataqsiz"))}};
    case GoKind::Func:
      if (v.value.empty()) return nullptr;
      return boost::json::string(v.value);
    case GoKind::UnsafePointer: return parseU64(v.value);
    default:
      if (isSigned(k) || isUnsigned(k) || isFloat(k) || isComplex(k)) return number(v);
      return v.value.empty() ? boost::json::value(nullptr) : boost::json::value(boost::json::string(v.value));
  }
}

std::string typeName(const rpc::Variable& v) {
  if (!v.type.empty()) return v.type;
  switch (kindOf(v)) {  // untyped constants: Go's default types
    case GoKind::Bool: return "bool";
    case GoKind::String: return "string";
    case GoKind::Float32:
    case GoKind::Float64: return "float64";
    case GoKind::Complex64:
    case GoKind::Complex128: return "complex128";
    case GoKind::Invalid: return "?";
    default: return isUnsigned(kindOf(v)) ? "uint" : "int";
  }
}


}  // namespace goscope::delve
