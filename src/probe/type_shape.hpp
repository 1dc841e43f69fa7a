// TypeShape: what a Go type looks like in memory, as far as argument capture
// needs it (kind, size, alignment, fields, element). Built from DWARF's types
// when the binary has them, else from the type's name alone (basic types,
// `*T`, `[]T`, `[N]T`, `map[..]`, `chan`, `func(..)`, `error`, `any`), which is
// all a user-given signature for a stripped binary can say, plus the kinds of
// named types the binary's runtime type records give (so `io.Writer` is known
// to be an interface: runtime_types.hpp).
//
// Shapes are immutable and shared; a value's shape travels with its layout so
// that decoding an event needs no DWARF. Pointers to pointers are not
// followed (a pointer inside a pointee is opaque), so recursive types such as
// `type node struct{ next *node }` build in finite time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "binary/dwarf_info.hpp"
#include "util/result.hpp"

namespace goscope {

class GoBinary;
class RuntimeTypeGraph;
struct TypeShape;
using ShapePtr = std::shared_ptr<const TypeShape>;

struct TypeShape {
  using Kind = GoType::Kind;
  struct Field {
    std::string name;
    uint64_t offset = 0;
    ShapePtr type;
  };

  std::string name;  // Go type name as DWARF (or the user) spells it
  Kind kind = Kind::Invalid;
  uint64_t size = 0;
  uint64_t align = 1;
  std::vector<Field> fields;  // Struct only
  // Pointer: the pointee (null when opaque: unknown, or a pointer inside a
  // pointee); Slice, Array: the element (null when unknown: elements are then
  // not shown); Map, Chan, Func: always null.
  ShapePtr elem;
  uint64_t count = 0;           // Array length
  bool emptyInterface = false;  // Interface: `interface {}`/`any` (type word) or an itab

  bool isPointerShaped() const;  // one word that is an address: *T, map, chan, func, unsafe.Pointer
};

// Kind of a basic type name (`int`, `uint8`, `byte`, `rune`, `float64`,
// `string`, `unsafe.Pointer`...); Invalid if `name` is not one.
GoType::Kind basicKind(std::string_view name);

// Where types come from: DwarfInfo::type, or a table in unit tests.
using TypeLookup = std::function<const GoType*(std::string_view name)>;
TypeLookup lookupIn(const DwarfInfo& dwarf);

// The kinds of the types a binary's runtime type records name `name`
// (`main.Shape`, `io.Writer`): none when it has no such type; more than one
// when two packages of one name define it. Named-only shapes use it for a
// qualified name they cannot build from the name alone: an interface is
// accepted (two words, itab and data), anything else is refused by its kind.
using NamedTypeKinds = std::function<std::vector<GoType::Kind>(std::string_view name)>;
// From the runtime type records the graph indexes (it must outlive the function).
NamedTypeKinds namedTypeKindsIn(RuntimeTypeGraph& graph);
// The types the binary's runtime type records describe (a struct's fields,
// an element, a pointee; binary/runtime_type_graph.hpp), for a user
// signature on a stripped binary: used as ShapeBuilder's lookup, they lay
// out `o main.Order` field by field. The graph must outlive the function.
TypeLookup lookupIn(RuntimeTypeGraph& graph);

// Every qualified name taken for an interface: for checking a signature's
// syntax before the binary is known (the binary's answer comes later).
NamedTypeKinds namedTypesUnchecked();

class ShapeBuilder {
 public:
  // Without a lookup (or for names it does not know) shapes come from names only.
  explicit ShapeBuilder(TypeLookup types = nullptr, NamedTypeKinds named = nullptr)
      : types_(std::move(types)), named_(std::move(named)) {}

  // Errors (Usage, naming the type and listing what names-only shapes
  // support) when the type is neither in DWARF nor understood from its name.
  Result<ShapePtr> build(std::string_view typeName);

 private:
  // followPointee: false inside pointees and slice elements (see above).
  Result<ShapePtr> build(std::string_view typeName, bool followPointee, int depth);
  Result<ShapePtr> fromDwarf(const GoType& t, bool followPointee, int depth);
  Result<ShapePtr> fromName(std::string_view name, bool followPointee, int depth);
  Result<ShapePtr> fromRuntimeKind(std::string_view name);

  TypeLookup types_;
  NamedTypeKinds named_;
  std::unordered_map<std::string, ShapePtr> cache_[2];  // [followPointee]
};

}  // namespace goscope
