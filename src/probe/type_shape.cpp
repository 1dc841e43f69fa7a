#include "probe/type_shape.hpp"

#include <algorithm>
#include <charconv>

#include "binary/runtime_type_graph.hpp"

namespace goscope {
namespace {

using K = GoType::Kind;
constexpr int kMaxDepth = 16;  // nested struct/array levels; deeper is surely malformed

constexpr std::string_view kNamesOnlyHelp =
    "without DWARF goscope knows bool, int8..int64, uint8..uint64, int, uint, uintptr, byte, rune, "
    "float32, float64, complex64, complex128, string, unsafe.Pointer, error, any/interface{}, "
    "*T (an opaque pointer), []T and [N]T of those, map/chan/func values (as pointers), and named interfaces "
    "(io.Writer, main.Shape: found in the binary's runtime type data)";

// "a struct", "an int": what a named type is, for the message refusing it.
std::string kindPhrase(K k) {
  static const char* const names[] = {"invalid", "bool", "int", "int8", "int16", "int32", "int64", "uint",
                                      "uint8", "uint16", "uint32", "uint64", "uintptr", "float32", "float64",
                                      "complex64", "complex128", "array", "chan", "func", "interface", "map",
                                      "pointer", "slice", "string", "struct", "unsafe.Pointer"};
  auto i = static_cast<size_t>(k);
  std::string n = i < std::size(names) ? names[i] : "unknown kind";
  bool vowel = n[0] == 'a' || n[0] == 'e' || n[0] == 'i' || n[0] == 'o' || n[0] == 'u';
  return (vowel ? "an " : "a ") + n;
}

// `main.Shape`, `io.Writer`, `net/http.ResponseWriter`: a name only the
// binary's type data can say anything about.
bool isQualifiedName(std::string_view n) {
  return n.find('.') != std::string_view::npos && n.find(' ') == std::string_view::npos &&
         n.find('(') == std::string_view::npos;
}

uint64_t basicSize(K k) {
  switch (k) {
    case K::Bool: case K::Int8: case K::Uint8: return 1;
    case K::Int16: case K::Uint16: return 2;
    case K::Int32: case K::Uint32: case K::Float32: return 4;
    case K::Complex128: case K::String: return 16;
    default: return 8;
  }
}

// Go's alignment rules on amd64 (abi-internal.md, "Memory layout").
uint64_t basicAlign(K k, uint64_t size) {
  switch (k) {
    case K::Complex64: return 4;
    case K::Complex128: case K::String: case K::Slice: case K::Interface: return 8;
    default: return std::clamp<uint64_t>(size, 1, 8);
  }
}

bool isScalarKind(K k) {
  switch (k) {
    case K::Bool: case K::Int: case K::Int8: case K::Int16: case K::Int32: case K::Int64:
    case K::Uint: case K::Uint8: case K::Uint16: case K::Uint32: case K::Uint64: case K::Uintptr:
    case K::Float32: case K::Float64: case K::Complex64: case K::Complex128:
    case K::UnsafePointer: case K::String:
      return true;
    default: return false;
  }
}

std::shared_ptr<TypeShape> scalar(std::string_view name, K kind) {
  auto s = std::make_shared<TypeShape>();
  s->name = std::string(name);
  s->kind = kind;
  s->size = basicSize(kind);
  s->align = basicAlign(kind, s->size);
  return s;
}

std::shared_ptr<TypeShape> word(std::string_view name, K kind) {
  auto s = std::make_shared<TypeShape>();
  s->name = std::string(name);
  s->kind = kind;
  s->size = 8;
  s->align = 8;
  return s;
}

std::shared_ptr<TypeShape> interfaceShape(std::string_view name, bool empty) {
  auto s = word(name, K::Interface);
  s->size = 16;
  s->emptyInterface = empty;
  return s;
}

// `go.shape.int_0` -> `int`, `go.shape.*uint8_1` -> `*uint8`: the underlying
// type a generic shape instantiation stands for.
std::string_view unshape(std::string_view name) {
  if (!name.starts_with("go.shape.")) return name;
  name.remove_prefix(9);
  auto us = name.rfind('_');
  if (us != std::string_view::npos && us + 1 < name.size() &&
      std::all_of(name.begin() + us + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    name = name.substr(0, us);
  return name;
}

}  // namespace

bool TypeShape::isPointerShaped() const {
  switch (kind) {
    case K::Pointer: case K::UnsafePointer: case K::Map: case K::Chan: case K::Func: return true;
    default: return false;
  }
}

GoType::Kind basicKind(std::string_view n) {
  static const std::pair<std::string_view, K> table[] = {
      {"bool", K::Bool},       {"int", K::Int},         {"int8", K::Int8},       {"int16", K::Int16},
      {"int32", K::Int32},     {"int64", K::Int64},     {"uint", K::Uint},       {"uint8", K::Uint8},
      {"uint16", K::Uint16},   {"uint32", K::Uint32},   {"uint64", K::Uint64},   {"uintptr", K::Uintptr},
      {"float32", K::Float32}, {"float64", K::Float64}, {"complex64", K::Complex64},
      {"complex128", K::Complex128}, {"string", K::String}, {"byte", K::Uint8}, {"rune", K::Int32},
      {"unsafe.Pointer", K::UnsafePointer},
  };
  for (const auto& [name, kind] : table)
    if (name == n) return kind;
  return K::Invalid;
}

TypeLookup lookupIn(const DwarfInfo& dwarf) {
  return [&dwarf](std::string_view name) { return dwarf.type(name); };
}

NamedTypeKinds namedTypeKindsIn(RuntimeTypeGraph& graph) {
  return [&graph](std::string_view name) { return graph.kindsNamed(name); };
}

TypeLookup lookupIn(RuntimeTypeGraph& graph) {
  return [&graph](std::string_view name) { return graph.find(name); };
}

NamedTypeKinds namedTypesUnchecked() {
  return [](std::string_view) { return std::vector<K>{K::Interface}; };
}

Result<ShapePtr> ShapeBuilder::build(std::string_view typeName) { return build(typeName, true, 0); }

Result<ShapePtr> ShapeBuilder::build(std::string_view typeName, bool followPointee, int depth) {
  if (depth > kMaxDepth) return fail(ErrorKind::BadTarget, "type nested too deeply: " + std::string(typeName));
  auto& cache = cache_[followPointee ? 1 : 0];
  std::string key(typeName);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Result<ShapePtr> r = fail(ErrorKind::Internal, "");
  const GoType* t = types_ ? types_(typeName) : nullptr;
  if (t && t->kind != K::Invalid) r = fromDwarf(*t, followPointee, depth);
  else r = fromName(typeName, followPointee, depth);
  if (r) cache.emplace(std::move(key), *r);
  return r;
}

Result<ShapePtr> ShapeBuilder::fromDwarf(const GoType& t, bool followPointee, int depth) {
  std::shared_ptr<TypeShape> s;
  if (isScalarKind(t.kind)) {
    s = scalar(t.name, t.kind);
    if (t.size) s->size = t.size;
    return ShapePtr(s);
  }
  switch (t.kind) {
    case K::Pointer:
      s = word(t.name, K::Pointer);
      if (followPointee && !t.elem.empty())
        if (auto e = build(t.elem, false, depth + 1)) s->elem = *e;
      return ShapePtr(s);
    case K::Map: case K::Chan: case K::Func:
      return ShapePtr(word(t.name, t.kind));
    case K::Interface: {
      bool empty = t.name == "interface {}" || (!t.fields.empty() && t.fields.front().name == "_type");
      return ShapePtr(interfaceShape(t.name, empty));
    }
    case K::Slice:
      s = word(t.name, K::Slice);
      s->size = 24;
      if (!t.elem.empty())
        if (auto e = build(t.elem, false, depth + 1)) s->elem = *e;
      return ShapePtr(s);
    case K::Array: {
      s = std::make_shared<TypeShape>();
      s->name = t.name;
      s->kind = K::Array;
      s->size = t.size;
      s->count = t.count;
      auto e = build(t.elem, false, depth + 1);
      if (!e) return e.failure();
      s->elem = *e;
      s->align = (*e)->align;
      return ShapePtr(s);
    }
    case K::Struct: {
      s = std::make_shared<TypeShape>();
      s->name = t.name;
      s->kind = K::Struct;
      s->size = t.size;
      for (const auto& f : t.fields) {
        auto ft = build(f.type, false, depth + 1);
        if (!ft) return fail(ft.error().kind, t.name + "." + f.name + ": " + ft.error().message, ft.error().hint);
        s->align = std::max(s->align, (*ft)->align);
        s->fields.push_back({f.name, f.offset, *ft});
      }
      return ShapePtr(s);
    }
    default:
      return fromName(t.name, followPointee, depth);
  }
}

Result<ShapePtr> ShapeBuilder::fromName(std::string_view name, bool followPointee, int depth) {
  std::string_view n = unshape(name);
  if (K k = basicKind(n); k != K::Invalid) return ShapePtr(scalar(name, k));
  if (n == "error") return ShapePtr(interfaceShape(name, false));
  if (n == "any" || n == "interface {}" || n == "interface{}") return ShapePtr(interfaceShape(name, true));
  if (n.starts_with("interface {") || n.starts_with("interface{")) return ShapePtr(interfaceShape(name, false));
  if (n == "struct {}" || n == "struct{}") {
    auto s = std::make_shared<TypeShape>();
    s->name = std::string(name);
    s->kind = K::Struct;
    return ShapePtr(s);
  }
  if (n.starts_with("*")) {
    auto s = word(name, K::Pointer);
    if (followPointee)
      if (auto e = build(n.substr(1), false, depth + 1)) s->elem = *e;
    return ShapePtr(s);
  }
  if (n.starts_with("map[")) return ShapePtr(word(name, K::Map));
  if (n.starts_with("chan ") || n.starts_with("<-chan ") || n.starts_with("chan<- "))
    return ShapePtr(word(name, K::Chan));
  if (n.starts_with("func(")) return ShapePtr(word(name, K::Func));
  if (n.starts_with("[]")) {
    auto s = word(name, K::Slice);
    s->size = 24;
    if (auto e = build(n.substr(2), false, depth + 1)) s->elem = *e;
    return ShapePtr(s);
  }
  if (n.starts_with("[")) {
    auto close = n.find(']');
    uint64_t count = 0;
    if (close != std::string_view::npos) {
      auto [p, ec] = std::from_chars(n.data() + 1, n.data() + close, count);
      if (ec == std::errc() && p == n.data() + close) {
        auto e = build(n.substr(close + 1), false, depth + 1);
        if (!e) return e.failure();
        auto s = std::make_shared<TypeShape>();
        s->name = std::string(name);
        s->kind = K::Array;
        s->count = count;
        s->elem = *e;
        s->size = count * (*e)->size;
        s->align = (*e)->align;
        return ShapePtr(s);
      }
    }
  }
  if (named_ && isQualifiedName(n)) return fromRuntimeKind(n);
  return fail(ErrorKind::Usage, "unsupported type `" + std::string(name) + "`", std::string(kNamesOnlyHelp));
}

// A named type without DWARF that the runtime records did not lay out (the
// lookup answers first, when there is one): an interface still has the
// layout its kind gives (two words, itab and data); anything else would be
// a guess, and decoding it would show wrong values with confidence.
Result<ShapePtr> ShapeBuilder::fromRuntimeKind(std::string_view name) {
  std::vector<K> kinds = named_(name);
  const std::string quoted = "`" + std::string(name) + "`";
  if (kinds.empty())
    return fail(ErrorKind::Usage, quoted + " is not a type in the binary's runtime type data",
                "write a named type as Go prints it (io.Writer, main.Point); the compiler keeps a record only of "
                "types converted to an interface, reflected on or reached from one: for another, give its "
                "underlying type, or a struct's fields as separate parameters");
  auto other = std::find_if(kinds.begin(), kinds.end(), [](K k) { return k != K::Interface; });
  if (other == kinds.end()) return ShapePtr(interfaceShape(name, false));
  if (kinds.size() > 1)
    return fail(ErrorKind::Usage, quoted + " names " + std::to_string(kinds.size()) +
                                      " types in the binary's runtime type data (packages of one name), " + kindPhrase(*other) + " among them",
                "give the underlying type instead (int for `type ID int`)");
  return fail(ErrorKind::Usage, quoted + " is " + kindPhrase(*other) + " in the binary's runtime type data, not an interface",
              "without DWARF goscope lays out a named type other than an interface only from its runtime record, "
              "which could not be read here: give the underlying type instead (int for `type ID int`)");
}

}  // namespace goscope
