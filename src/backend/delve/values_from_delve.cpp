#include "backend/delve/values_from_delve.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace goscope {

namespace {

using rpc::GoKind;
using rpc::Variable;
using K = Value::Kind;

GoKind kindOf(const Variable& v) { return static_cast<GoKind>(v.kind); }

// Delve 1.20.2 reports every signed integer as Int and every unsigned one as
// Uint (measured); the other kinds are accepted too in case a version does not.
bool isSigned(GoKind k) { return k >= GoKind::Int && k <= GoKind::Int64; }
bool isUnsigned(GoKind k) { return k >= GoKind::Uint && k <= GoKind::Uintptr; }

uint64_t parseU64(const std::string& s) {
  uint64_t out = 0;
  std::from_chars(s.data(), s.data() + s.size(), out);
  return out;
}

double parseFloat(const std::string& s) {
  if (s == "+Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return std::nan("");
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

std::string childValue(const Variable& v, const char* name) {
  for (const auto& c : v.children)
    if (c.name == name) return c.value;
  return "0";
}

// An interface's dynamic value, or nullptr for a nil interface (Delve gives
// it one child of kind Invalid, type "void", at address 0).
const Variable* dynamicValue(const Variable& v) {
  if (v.children.empty()) return nullptr;
  const Variable& d = v.children[0];
  if (kindOf(d) == GoKind::Invalid && d.unreadable.empty()) return nullptr;
  return &d;
}

// Untyped constants (len(x), 1+2): Go's default types.
std::string typeNameOf(const Variable& v) {
  if (!v.type.empty()) return v.type;
  switch (kindOf(v)) {
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

std::vector<Value> convertAll(const std::vector<Variable>& vars) {
  std::vector<Value> out;
  for (const auto& c : vars) out.push_back(valueFromDelve(c));
  return out;
}

}  // namespace

Value valueFromDelve(const Variable& v) {
  Value x;
  x.name = v.name;
  x.type = typeNameOf(v);
  if (!v.unreadable.empty()) {
    x.kind = K::Unavailable;
    x.unavailable = "unreadable: " + v.unreadable;
    return x;
  }
  const GoKind k = kindOf(v);
  if (isSigned(k)) {
    x.kind = K::Int;
    std::from_chars(v.value.data(), v.value.data() + v.value.size(), x.i);
    return x;
  }
  if (isUnsigned(k)) {
    x.kind = K::Uint;
    x.u = parseU64(v.value);
    return x;
  }
  switch (k) {
    case GoKind::Bool:
      x.kind = K::Bool;
      x.boolean = v.value == "true";
      return x;
    case GoKind::Float32:
    case GoKind::Float64:
      x.kind = K::Float;
      x.f = parseFloat(v.value);
      return x;
    case GoKind::Complex64:
    case GoKind::Complex128:
      x.kind = K::Complex;
      x.f = parseFloat(childValue(v, "real"));
      x.imag = parseFloat(childValue(v, "imaginary"));
      return x;
    case GoKind::String:
      x.kind = K::String;
      x.text = v.value;
      x.len = v.len > 0 ? static_cast<uint64_t>(v.len) : v.value.size();
      return x;
    case GoKind::Array:
      x.kind = K::Array;
      x.len = static_cast<uint64_t>(v.len);
      x.children = convertAll(v.children);
      return x;
    case GoKind::Slice:
      x.kind = K::Slice;
      x.nil = v.base == 0 && v.len == 0;
      x.address = v.base;
      x.len = static_cast<uint64_t>(v.len);
      x.cap = static_cast<uint64_t>(v.cap);
      x.children = convertAll(v.children);
      return x;
    case GoKind::Map:
      x.kind = K::Map;
      x.nil = v.base == 0 && v.len == 0;
      x.address = v.base;
      x.len = static_cast<uint64_t>(v.len);
      x.children = convertAll(v.children);
      return x;
    case GoKind::Struct:
      x.kind = K::Struct;
      x.elided = v.children.empty() && v.len > 0;  // past the recursion limit
      x.children = convertAll(v.children);
      return x;
    case GoKind::Pointer:
      if (v.type == "unsafe.Pointer") {
        x.kind = K::UnsafePointer;
        x.address = parseU64(v.value);
        x.nil = x.address == 0;
        return x;
      }
      x.kind = K::Pointer;
      x.address = parseU64(v.value);
      x.nil = v.value.empty() || x.address == 0;
      if (!x.nil && !v.children.empty()) x.children.push_back(valueFromDelve(v.children[0]));
      return x;
    case GoKind::UnsafePointer:
      x.kind = K::UnsafePointer;
      x.address = parseU64(v.value);
      x.nil = x.address == 0;
      return x;
    case GoKind::Interface: {
      x.kind = K::Interface;
      const Variable* d = dynamicValue(v);
      x.nil = d == nullptr;
      if (d) {
        x.dynamicType = typeNameOf(*d);
        x.address = d->addr;
        x.children.push_back(valueFromDelve(*d));
      }
      return x;
    }
    case GoKind::Chan:
      x.kind = K::Chan;
      x.nil = v.children.empty();
      x.len = parseU64(childValue(v, "qcount"));
      x.cap = parseU64(childValue(v, "dataqsiz"));
      return x;
    case GoKind::Func:
      x.kind = K::Func;
      x.nil = v.value.empty();
      x.text = v.value;
      x.address = v.base;
      return x;
    default:
      x.kind = K::Unavailable;
      x.unavailable = v.value.empty() ? "unknown kind" : v.value;
      return x;
  }
}

}  // namespace goscope
