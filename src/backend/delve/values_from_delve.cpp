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

// Whether Delve left `v` unloaded (docs/delve.md "Values Delve did not
// load"): OnlyAddr (an interface's dynamic value past MaxVariableRecurse), a
// struct or map past it (Len counted, no Children), or a pointer or interface
// that was never loaded at all (a loaded one always has Children). Those at
// address 0 are nil, not cut: nothing to load there.
bool notLoaded(const Variable& v) {
  if (v.onlyAddr) return kindOf(v) != GoKind::Invalid;
  switch (kindOf(v)) {
    case GoKind::Struct:
    case GoKind::Map: return v.children.empty() && v.len > 0;
    case GoKind::Pointer: return v.children.empty() && v.value.empty() && v.addr != 0 && v.type != "unsafe.Pointer";
    case GoKind::Interface: return v.children.empty() && v.addr != 0;
    default: return false;
  }
}

Value::Kind kindOfCut(GoKind k) {
  if (isSigned(k)) return K::Int;
  if (isUnsigned(k)) return K::Uint;
  switch (k) {
    case GoKind::Bool: return K::Bool;
    case GoKind::Float32:
    case GoKind::Float64: return K::Float;
    case GoKind::Complex64:
    case GoKind::Complex128: return K::Complex;
    case GoKind::String: return K::String;
    case GoKind::Array: return K::Array;
    case GoKind::Chan: return K::Chan;
    case GoKind::Func: return K::Func;
    case GoKind::Interface: return K::Interface;
    case GoKind::Map: return K::Map;
    case GoKind::Pointer: return K::Pointer;
    case GoKind::Struct: return K::Struct;
    case GoKind::UnsafePointer: return K::UnsafePointer;
    default: return K::Unavailable;
  }
}

// A value Delve did not load: cut ({…}), with its address for a follow-up
// read (`*(*T)(addr)`) and a map's counted length. A slice is never cut by
// depth (Delve always loads it): one not loaded at all (an interface's
// dynamic value past the depth) keeps its header and says why its elements
// are missing.
Value cutValue(Value x, const Variable& v) {
  x.kind = kindOfCut(kindOf(v));
  x.address = v.addr;
  if (kindOf(v) == GoKind::Slice) {
    x.kind = K::Slice;
    x.address = v.base;  // a slice's address is its backing array's, as below
    x.len = static_cast<uint64_t>(v.len);
    x.cap = static_cast<uint64_t>(v.cap);
    x.elementsUnavailable = "past Delve's load depth";
    return x;
  }
  if (x.kind == K::Unavailable) {
    x.unavailable = "past Delve's load depth";
    return x;
  }
  x.elided = true;
  if (x.kind == K::Map) x.len = static_cast<uint64_t>(v.len);
  return x;
}

std::vector<Value> convertAll(const std::vector<Variable>& vars) {
  std::vector<Value> out;
  for (const auto& c : vars) out.push_back(valueFromDelve(c));
  return out;
}

}  // namespace

std::vector<Value> valuesOfExpressions(const std::vector<Variable>& vars, const std::vector<std::string>& exprs) {
  std::vector<Value> out;
  for (size_t i = 0; i < vars.size(); ++i) {
    out.push_back(valueFromDelve(vars[i]));
    if (i < exprs.size()) out.back().name = exprs[i];
  }
  return out;
}

Value valueFromDelve(const Variable& v) {
  Value x;
  x.name = v.name;
  x.type = typeNameOf(v);
  if (!v.unreadable.empty()) {
    x.kind = K::Unavailable;
    x.unavailable = "unreadable: " + v.unreadable;
    return x;
  }
  if (notLoaded(v)) return cutValue(std::move(x), v);
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
    case GoKind::Struct:  // past the recursion limit: cut above
      x.kind = K::Struct;
      x.children = convertAll(v.children);
      return x;
    case GoKind::Pointer:
      if (v.type == "unsafe.Pointer") {
        x.kind = K::UnsafePointer;
        x.address = parseU64(v.value);
        x.nil = x.address == 0;
        return x;
      }
      // Delve's Value is the target's address once loaded; a pointer made by
      // `&x` is not loaded and has only its target (OnlyAddr) as a child.
      x.kind = K::Pointer;
      x.address = !v.value.empty() ? parseU64(v.value) : !v.children.empty() ? v.children[0].addr : 0;
      x.nil = x.address == 0;
      // A target Delve did not follow (OnlyAddr) is left out: the address says it.
      if (!x.nil && !v.children.empty() && !v.children[0].onlyAddr) x.children.push_back(valueFromDelve(v.children[0]));
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
