#include "backend/memory/direct_read.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include "target/go_runtime_facts.hpp"

namespace goscope {

namespace {

using Kind = GoType::Kind;

bool isInteger(Kind k) { return k >= Kind::Int && k <= Kind::Uintptr; }
bool isSignedKind(Kind k) { return k >= Kind::Int && k <= Kind::Int64; }

// The reasons a type needs Delve, checked as deep as loading would go.
std::string refusal(const DwarfInfo& d, const std::string& typeName, int depth, const DirectReadLimits& lim) {
  const GoType* t = d.type(typeName);
  if (!t) return "its type " + typeName + " is not in DWARF";
  switch (t->kind) {
    case Kind::Bool:
    case Kind::Float32:
    case Kind::Float64:
    case Kind::String:
    case Kind::UnsafePointer:
      return {};
    case Kind::Struct:
      if (depth > lim.maxDepth) return {};
      for (const auto& f : t->fields)
        if (auto why = refusal(d, f.type, depth + 1, lim); !why.empty()) return why;
      return {};
    case Kind::Array:
    case Kind::Slice:
    case Kind::Pointer:
      if (depth > lim.maxDepth) return {};
      return refusal(d, t->elem, depth + 1, lim);
    case Kind::Map: return "it holds a map (" + t->name + "), whose layout only Delve follows";
    case Kind::Interface: return "it holds an interface (" + t->name + "), whose dynamic type only Delve resolves";
    case Kind::Chan: return "it holds a channel (" + t->name + ")";
    case Kind::Func: return "it holds a func (" + t->name + ")";
    case Kind::Complex64:
    case Kind::Complex128: return "it holds a complex number";
    default:
      if (isInteger(t->kind)) return {};
      return "its type " + t->name + " is not one goscope lays out itself";
  }
}

class Loader {
 public:
  Loader(const DwarfInfo& d, const Process& p, const DirectReadLimits& lim) : d_(d), p_(p), lim_(lim) {}

  // Fails only when the process is gone or unreadable as a whole; a bad
  // pointer inside the value marks that part unreadable, as Delve does.
  Result<Value> load(const std::string& name, const std::string& typeName, uint64_t addr, int depth) {
    Value v;
    v.name = name;
    v.type = typeName;
    const GoType* t = d_.type(typeName);
    if (!t) return Value::missing("unreadable: type " + typeName + " not in DWARF", name);
    if (auto r = fill(v, *t, addr, depth); !r) {
      if (r.error().kind == ErrorKind::TargetGone || r.error().kind == ErrorKind::Permission) return fail(r.error());
      Value bad = Value::missing("unreadable: " + r.error().message, name);
      bad.type = typeName;
      return bad;
    }
    return v;
  }

 private:
  Result<uint64_t> word(uint64_t addr, size_t size) {
    auto b = p_.readMemory(addr, size);
    if (!b) return fail(b.error());
    uint64_t x = 0;
    std::memcpy(&x, b->data(), std::min<size_t>(size, 8));
    return x;
  }

  Result<void> fill(Value& v, const GoType& t, uint64_t addr, int depth) {
    if (isInteger(t.kind) || t.kind == Kind::Bool || t.kind == Kind::UnsafePointer) {
      auto x = word(addr, t.size);
      if (!x) return fail(x.error());
      if (t.kind == Kind::Bool) {
        v.kind = Value::Kind::Bool;
        v.boolean = *x != 0;
      } else if (t.kind == Kind::UnsafePointer) {
        v.kind = Value::Kind::UnsafePointer;
        v.address = *x;
        v.nil = *x == 0;
      } else if (isSignedKind(t.kind)) {
        int shift = 64 - 8 * static_cast<int>(t.size);
        v.kind = Value::Kind::Int;
        v.i = static_cast<int64_t>(*x << shift) >> shift;  // sign-extend
      } else {
        v.kind = Value::Kind::Uint;
        v.u = *x;
      }
      return {};
    }
    switch (t.kind) {
      case Kind::Float32: {
        auto x = word(addr, 4);
        if (!x) return fail(x.error());
        float f;
        uint32_t bits = static_cast<uint32_t>(*x);
        std::memcpy(&f, &bits, 4);
        v.kind = Value::Kind::Float;
        v.f = f;
        return {};
      }
      case Kind::Float64: {
        auto x = word(addr, 8);
        if (!x) return fail(x.error());
        v.kind = Value::Kind::Float;
        std::memcpy(&v.f, &*x, 8);
        return {};
      }
      case Kind::String: {
        auto ptr = word(addr, 8);
        auto len = ptr ? word(addr + 8, 8) : ptr;
        if (!len) return fail(len.error());
        v.kind = Value::Kind::String;
        v.len = *len;
        size_t n = std::min<uint64_t>(*len, lim_.maxString);
        if (n == 0) return {};
        auto bytes = p_.readMemory(*ptr, n);
        if (!bytes) return fail(bytes.error());
        v.text.assign(bytes->begin(), bytes->end());
        return {};
      }
      case Kind::Struct: {
        v.kind = Value::Kind::Struct;
        if (depth > lim_.maxDepth) {  // as Delve past its recursion limit
          v.elided = !t.fields.empty();
          return {};
        }
        for (const auto& f : t.fields) {
          auto c = load(f.name, f.type, addr + f.offset, depth + 1);
          if (!c) return fail(c.error());
          v.children.push_back(std::move(*c));
        }
        return {};
      }
      case Kind::Array:
        v.kind = Value::Kind::Array;
        return elements(v, t, addr, t.count, depth);
      case Kind::Slice: {
        auto base = word(addr, 8);
        auto len = base ? word(addr + 8, 8) : base;
        auto cap = len ? word(addr + 16, 8) : len;
        if (!cap) return fail(cap.error());
        v.kind = Value::Kind::Slice;
        v.address = *base;
        v.cap = *cap;
        v.nil = *base == 0 && *len == 0;
        return elements(v, t, *base, *len, depth);
      }
      case Kind::Pointer: {
        auto x = word(addr, 8);
        if (!x) return fail(x.error());
        v.kind = Value::Kind::Pointer;
        v.address = *x;
        v.nil = *x == 0;
        if (*x == 0 || depth > lim_.maxDepth) return {};
        auto c = load("", t.elem, *x, depth + 1);
        if (!c) return fail(c.error());
        v.children.push_back(std::move(*c));
        return {};
      }
      default:
        return fail(ErrorKind::Usage, "cannot read a " + t.name + " directly");
    }
  }

  Result<void> elements(Value& v, const GoType& t, uint64_t base, uint64_t len, int depth) {
    v.len = len;
    const GoType* e = d_.type(t.elem);
    if (!e || depth > lim_.maxDepth) return {};
    uint64_t n = std::min<uint64_t>(len, lim_.maxElems);
    for (uint64_t i = 0; i < n; i++) {
      auto c = load("", t.elem, base + i * e->size, depth + 1);
      if (!c) return fail(c.error());
      v.children.push_back(std::move(*c));
    }
    return {};
  }

  const DwarfInfo& d_;
  const Process& p_;
  DirectReadLimits lim_;
};

}  // namespace

std::string directReadRefusal(const GoBinary& bin, const std::string& name) {
  const DwarfInfo* d = bin.dwarfGlobals({name});
  if (!d) return "the binary has no DWARF: variable types are unknown";
  const GoVariable* v = d->variable(name);
  if (!v) return name + " is not a package variable (an expression, or unknown): Delve evaluates it";
  if (std::string why = refusal(*d, v->type, 0, DirectReadLimits{}); !why.empty()) return name + ": " + why;
  return {};
}

Result<Value> readGlobalDirect(const GoBinary& bin, const Process& proc, uint64_t loadBias,
                                       const std::string& name, const DirectReadLimits& limits) {
  const DwarfInfo* d = bin.dwarfGlobals({name});
  if (!d) return fail(ErrorKind::BadTarget, bin.name() + " has no DWARF: " + name + "'s type is unknown");
  const GoVariable* gv = d->variable(name);
  if (!gv) {
    auto g = findGlobal(bin, name);  // its error says unknown or stripped
    if (!g) return fail(g.error());
    return fail(ErrorKind::NoMatch, name + " has no type in DWARF");
  }
  Loader loader(*d, proc, limits);
  return loader.load(name, gv->type, gv->address + loadBias, 0);
}

}  // namespace goscope
