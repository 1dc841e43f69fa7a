// Types: how Go's linker writes them (cmd/link/internal/ld/dwarf.go, defgotype):
//  - every type DIE is named with its Go name and has DW_AT_go_kind;
//  - named types get a second, plain DW_TAG_typedef of the same name
//    (dotypedef, for gdb); we index the DIE that has DW_AT_go_kind;
//  - string and slices are DW_TAG_structure_type ({str,len}, {array,len,cap}),
//    a slice's element in DW_AT_go_elem;
//  - interfaces are typedefs of runtime.iface / runtime.eface;
//  - maps and channels are typedefs of pointers to the runtime's hash<K,V> and
//    hchan<T>, key and element in DW_AT_go_key / DW_AT_go_elem;
//  - pointers carry no DW_AT_byte_size.
#include <dwarf.h>

#include "binary/dwarf_reader.hpp"

namespace goscope {

namespace {

constexpr uint64_t kPointerSize = 8;  // linux/amd64 only
constexpr int kMaxDepth = 32;         // guards against malformed typedef cycles

GoType::Kind kindFromBaseType(Dwarf_Die* die, uint64_t size) {
  using K = GoType::Kind;
  switch (udataAttr(die, DW_AT_encoding).value_or(0)) {
    case DW_ATE_boolean: return K::Bool;
    case DW_ATE_float: return size == 4 ? K::Float32 : K::Float64;
    case DW_ATE_complex_float: return size == 8 ? K::Complex64 : K::Complex128;
    case DW_ATE_signed:
      return size == 1 ? K::Int8 : size == 2 ? K::Int16 : size == 4 ? K::Int32 : K::Int64;
    case DW_ATE_unsigned:
      return size == 1 ? K::Uint8 : size == 2 ? K::Uint16 : size == 4 ? K::Uint32 : K::Uint64;
    default: return K::Invalid;
  }
}

}  // namespace

std::string DwarfReader::typeName(Dwarf_Die* die) {
  Dwarf_Off off = dwarf_dieoffset(die);
  if (auto it = nameCache_.find(off); it != nameCache_.end()) return it->second;
  std::string name;
  const char* n = dieName(die);
  if (n && n[0] != '.') {
    name = n;
  } else {
    // `.paramN` typedefs inside a shape instantiation, or an unnamed DIE.
    Dwarf_Die target = *die;
    int depth = 0;
    while (depth++ < kMaxDepth && refAttr(&target, DW_AT_type, &target)) {
      const char* tn = dieName(&target);
      if (tn && tn[0] != '.') {
        name = tn;
        break;
      }
    }
    if (name.empty() && dwarf_tag(die) == DW_TAG_pointer_type) name = "unsafe.Pointer";
    if (!n && dwarf_tag(die) == DW_TAG_pointer_type && !name.empty() && name != "unsafe.Pointer")
      name = "*" + name;
  }
  nameCache_.emplace(off, name);
  return name;
}

std::string DwarfReader::typeNameOf(Dwarf_Die* die) {
  Dwarf_Die t;
  return refAttr(die, DW_AT_type, &t) ? typeName(&t) : std::string();
}

uint64_t DwarfReader::typeSize(Dwarf_Die* die, int depth) {
  if (depth > kMaxDepth) return 0;
  Dwarf_Off off = dwarf_dieoffset(die);
  if (auto it = sizeCache_.find(off); it != sizeCache_.end()) return it->second;
  uint64_t size = 0;
  if (auto bs = udataAttr(die, DW_AT_byte_size)) {
    size = *bs;
  } else {
    Dwarf_Die t;
    switch (dwarf_tag(die)) {
      case DW_TAG_pointer_type:
      case DW_TAG_subroutine_type: size = kPointerSize; break;
      case DW_TAG_typedef:
        if (refAttr(die, DW_AT_type, &t)) size = typeSize(&t, depth + 1);
        break;
      case DW_TAG_array_type: {
        uint64_t count = 0;
        Dwarf_Die sub;
        if (dwarf_child(die, &sub) == 0 && dwarf_tag(&sub) == DW_TAG_subrange_type) {
          if (auto c = udataAttr(&sub, DW_AT_count)) count = *c;
          else if (auto ub = udataAttr(&sub, DW_AT_upper_bound)) count = *ub + 1;
        }
        if (refAttr(die, DW_AT_type, &t)) size = count * typeSize(&t, depth + 1);
        break;
      }
      default: break;
    }
  }
  sizeCache_.emplace(off, size);
  return size;
}

uint64_t DwarfReader::typeSizeOf(Dwarf_Die* die) {
  Dwarf_Die t;
  return refAttr(die, DW_AT_type, &t) ? typeSize(&t) : 0;
}

void DwarfReader::noteType(Dwarf_Die* die) {
  const char* n = dieName(die);
  if (!n || n[0] == '.') return;
  bool hasGoKind = dwarf_hasattr(die, kAtGoKind);
  auto [it, inserted] = typeCandidates_.try_emplace(n, TypeCandidate{dwarf_dieoffset(die), hasGoKind});
  if (!inserted && !it->second.hasGoKind && hasGoKind) it->second = {dwarf_dieoffset(die), true};
  // Where its runtime._type is (the linker's own `uintptr` holds an
  // absolute address instead: skipped, as in buildType).
  Dwarf_Attribute rt;
  Dwarf_Addr rtOff = 0;
  if (recordRuntimeTypes_ && hasGoKind && dwarf_attr(die, kAtGoRuntimeType, &rt) && dwarf_formaddr(&rt, &rtOff) == 0 &&
      rtOff != 0 && std::string_view(n) != "uintptr")
    out_.typeByRuntimeOffset_.try_emplace(rtOff, n);
}

static void readMembers(DwarfReader& r, Dwarf_Die* structDie, std::vector<GoType::Field>& fields) {
  Dwarf_Die m;
  if (dwarf_child(structDie, &m) != 0) return;
  do {
    if (dwarf_tag(&m) != DW_TAG_member) continue;
    GoType::Field f;
    if (const char* n = r.dieName(&m)) f.name = n;
    f.offset = udataAttr(&m, DW_AT_data_member_location).value_or(0);
    f.type = r.typeNameOf(&m);
    f.embedded = flagAttr(&m, kAtGoEmbeddedField);
    fields.push_back(std::move(f));
  } while (dwarf_siblingof(&m, &m) == 0);
}

GoType DwarfReader::buildType(Dwarf_Die* die, int depth) {
  using K = GoType::Kind;
  GoType t;
  if (const char* n = dieName(die)) t.name = n;
  t.size = typeSize(die);
  // DW_FORM_addr holding an offset from moduledata.types, except on the
  // linker's own `uintptr`, which holds an absolute address: dropped.
  Dwarf_Attribute rt;
  Dwarf_Addr rtOff = 0;
  if (t.name != "uintptr" && dwarf_attr(die, kAtGoRuntimeType, &rt) && dwarf_formaddr(&rt, &rtOff) == 0)
    t.runtimeTypeOffset = rtOff;
  int tag = dwarf_tag(die);
  Dwarf_Die target;
  bool hasTarget = refAttr(die, DW_AT_type, &target);

  // The linker's synthesized runtime types (hash<K,V>, *bucket<K,V>,
  // map<K,V>, *table<K,V>...) carry DW_AT_go_kind 0: their tag says what they are.
  if (auto k = udataAttr(die, kAtGoKind); k && *k != 0 && *k <= static_cast<uint64_t>(K::UnsafePointer)) {
    t.kind = static_cast<K>(*k);
  } else if (tag == DW_TAG_typedef && hasTarget && depth < kMaxDepth) {
    // A plain typedef (no Go kind) stands for its target. Depth-limited: a
    // typedef cycle in malformed DWARF overflowed the stack (found by fuzzing,
    // tests/fuzz/dwarf_types/regressions/); past the limit the type is Invalid.
    GoType inner = buildType(&target, depth + 1);
    inner.name = t.name;
    return inner;
  } else {
    switch (tag) {
      case DW_TAG_structure_type: t.kind = K::Struct; break;
      case DW_TAG_pointer_type:  // the linker's bare unsafe.Pointer has no go_kind
        t.kind = t.name == "unsafe.Pointer" ? K::UnsafePointer : K::Pointer;
        break;
      case DW_TAG_subroutine_type: t.kind = K::Func; break;
      case DW_TAG_array_type: t.kind = K::Array; break;
      case DW_TAG_base_type: t.kind = kindFromBaseType(die, t.size); break;
      default: break;
    }
  }

  Dwarf_Die other;
  switch (t.kind) {
    case K::Struct:
    case K::String: readMembers(*this, die, t.fields); break;
    case K::Slice:
      readMembers(*this, die, t.fields);
      if (refAttr(die, kAtGoElem, &other)) t.elem = typeName(&other);
      break;
    case K::Interface: {
      // runtime.iface / runtime.eface, possibly behind the gdb typedef.
      int depth = 0;
      while (hasTarget && dwarf_tag(&target) == DW_TAG_typedef && depth++ < kMaxDepth)
        hasTarget = refAttr(&target, DW_AT_type, &target);
      if (hasTarget) readMembers(*this, &target, t.fields);
      break;
    }
    case K::Pointer:
      if (hasTarget) t.elem = typeName(&target);
      break;
    case K::Array: {
      if (hasTarget) t.elem = typeName(&target);
      Dwarf_Die sub;
      if (dwarf_child(die, &sub) == 0 && dwarf_tag(&sub) == DW_TAG_subrange_type)
        t.count = udataAttr(&sub, DW_AT_count).value_or(udataAttr(&sub, DW_AT_upper_bound).value_or(UINT64_MAX) + 1);
      break;
    }
    case K::Map:
      if (refAttr(die, kAtGoKey, &other)) t.key = typeName(&other);
      [[fallthrough]];
    case K::Chan:
      if (refAttr(die, kAtGoElem, &other)) t.elem = typeName(&other);
      if (hasTarget) t.impl = typeName(&target);  // *hash<K,V>, *map<K,V>, *hchan<T>
      t.size = kPointerSize;
      break;
    default: break;
  }
  return t;
}

void DwarfReader::finishTypes() {
  out_.types_.reserve(typeCandidates_.size());
  for (auto& [name, c] : typeCandidates_) {
    Dwarf_Die d;
    if (!dwarf_offdie(dbg_, c.offset, &d)) continue;
    GoType t = buildType(&d);
    t.name = name;
    out_.types_.emplace(name, std::move(t));
  }
}

void DwarfReader::finishTypesReachedFrom(std::vector<std::string> pending) {
  std::unordered_map<std::string, bool> seen;
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    if (name.empty() || !seen.emplace(name, true).second) continue;
    auto c = typeCandidates_.find(name);
    Dwarf_Die d;
    if (c == typeCandidates_.end() || !dwarf_offdie(dbg_, c->second.offset, &d)) continue;
    GoType t = buildType(&d);
    t.name = name;
    for (const auto& f : t.fields) pending.push_back(f.type);
    pending.push_back(t.elem);
    pending.push_back(t.key);
    pending.push_back(t.impl);
    out_.types_.emplace(name, std::move(t));
  }
}

}  // namespace goscope
