#include "binary/runtime_type_graph.hpp"

#include <cstring>

#include "binary/go_binary.hpp"
#include "binary/runtime_types.hpp"

namespace goscope {

namespace {

// runtime._type (internal/abi.Type) on amd64, Go 1.14 .. 1.27, and the
// kind-specific fields after it (docs/go-runtime.md).
constexpr uint64_t kHeader = 48;
constexpr uint64_t kSizeOff = 0, kTflagOff = 20, kKindOff = 23, kStrOff = 40;
constexpr uint8_t kTflagExtraStar = 1 << 1;
constexpr uint8_t kKindMask = 0x1f;
constexpr uint64_t kElemOff = 48;     // Pointer, Slice, Array, Chan: *_type
constexpr uint64_t kArrayLenOff = 64; // Array: len
constexpr uint64_t kFieldsOff = 56;   // Struct: fields []StructField (ptr, len, cap); Interface: methods
constexpr uint64_t kStructFieldSize = 24;  // Name (pointer), Typ *_type, Offset uintptr
constexpr uint8_t kNameEmbedded = 1 << 3;  // a field name's flag: embedded (Go 1.19+)
constexpr int kMaxDepth = 16;
constexpr uint8_t kTflagUncommon = 1 << 0;
constexpr uint64_t kPtrToThisOff = 44;
constexpr uint64_t kUncommonSize = 16;  // PkgPath, Mcount, Xcount, Moff, _
constexpr uint64_t kMethodSize = 16;    // Name, Mtyp, Ifn, Tfn (int32 offsets)
constexpr uint64_t kFuncInOff = 48;     // FuncType: InCount, OutCount (uint16; the top bit: variadic)
constexpr uint64_t kFuncParamsOff = 56;

// Where the UncommonType follows the kind's own part (internal/abi/type.go:
// Type.Uncommon); nullopt for kinds whose part goscope does not size (Map).
std::optional<uint64_t> uncommonAt(GoType::Kind k) {
  switch (k) {
    case GoType::Kind::Struct: case GoType::Kind::Interface: return 80;
    case GoType::Kind::Pointer: case GoType::Kind::Slice: case GoType::Kind::Func: return 56;
    case GoType::Kind::Array: return 72;
    case GoType::Kind::Chan: return 64;
    case GoType::Kind::Map: return std::nullopt;
    default: return 48;
  }
}

int32_t i32(std::span<const uint8_t> b, uint64_t off) {
  int32_t v = 0;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}
constexpr uint64_t kMaxFields = 4096;

uint64_t u64(std::span<const uint8_t> b, uint64_t off) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + off, 8);
  return v;
}

}  // namespace

std::string RuntimeTypeGraph::nameAt(uint64_t addr) const {
  auto head = bin_.elf().readVaddr(addr, 4);
  if (!head) return {};
  // flags, then the length as a varint (Go >= 1.17).
  uint64_t len = 0, at = 1;
  for (int shift = 0; at < head->size() && shift < 28; shift += 7) {
    uint8_t b = (*head)[at++];
    len |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  auto bytes = bin_.elf().readVaddr(addr + at, len);
  if (!bytes) return {};
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

std::string RuntimeTypeGraph::decode(uint64_t addr, int depth) {
  if (auto it = keyOf_.find(addr); it != keyOf_.end()) return it->second;
  const auto types = bin_.pclntab().typesStart();
  if (!types || depth > kMaxDepth) return {};
  auto h = bin_.elf().readVaddr(addr, kHeader + 32);
  if (!h) return {};
  const uint8_t kind = (*h)[kKindOff] & kKindMask;
  if (kind == 0 || kind > static_cast<uint8_t>(GoType::Kind::UnsafePointer)) return {};
  int32_t str = 0;
  std::memcpy(&str, h->data() + kStrOff, 4);
  std::string name = str > 0 ? nameAt(*types + static_cast<uint64_t>(str)) : std::string();
  if (((*h)[kTflagOff] & kTflagExtraStar) && name.starts_with('*')) name.erase(0, 1);
  if (name.empty()) return {};
  std::string key = name;
  for (int n = 2; types_.contains(key); n++) key = name + "#" + std::to_string(n);
  keyOf_[addr] = key;  // before the fields: a recursive type refers to itself by key
  GoType t;
  t.name = name;
  t.kind = static_cast<GoType::Kind>(kind);
  t.size = u64(*h, kSizeOff);
  switch (t.kind) {
    case GoType::Kind::Pointer:
    case GoType::Kind::Slice:
    case GoType::Kind::Array: {
      auto elem = bin_.elf().readPointer(addr + kElemOff);
      if (elem && *elem) t.elem = decode(*elem, depth + 1);
      if (t.kind == GoType::Kind::Array) t.count = u64(*h, kArrayLenOff);
      if (t.kind != GoType::Kind::Pointer && t.elem.empty()) {
        keyOf_.erase(addr);
        return {};
      }
      break;
    }
    case GoType::Kind::Struct: {
      auto fields = bin_.elf().readPointer(addr + kFieldsOff);
      const uint64_t n = u64(*h, kFieldsOff + 8);
      if (n > kMaxFields || (n && (!fields || !*fields))) {
        keyOf_.erase(addr);
        return {};
      }
      for (uint64_t i = 0; i < n; i++) {
        const uint64_t f = *fields + i * kStructFieldSize;
        auto fname = bin_.elf().readPointer(f);
        auto ftype = bin_.elf().readPointer(f + 8);
        auto off = bin_.elf().readVaddr(f + 16, 8);
        if (!fname || !ftype || !off) {
          keyOf_.erase(addr);
            return {};
        }
        GoType::Field field;
        field.name = nameAt(*fname);
        auto flags = bin_.elf().readVaddr(*fname, 1);
        field.embedded = flags && ((*flags)[0] & kNameEmbedded);
        field.offset = u64(*off, 0);
        field.type = decode(*ftype, depth + 1);
        if (field.type.empty() || field.offset > t.size) {
          keyOf_.erase(addr);
            return {};
        }
        t.fields.push_back(std::move(field));
      }
      break;
    }
    case GoType::Kind::Interface:
      // No methods: `interface {}` ({_type, data}); else {tab, data}.
      if (u64(*h, kFieldsOff + 8) == 0) t.fields = {{"_type", 0, "uintptr"}, {"data", 8, "uintptr"}};
      else t.fields = {{"tab", 0, "uintptr"}, {"data", 8, "uintptr"}};
      break;
    default: break;
  }
  auto placed = types_.emplace(key, std::move(t)).first;
  recordOf_[&placed->second] = addr;
  return key;
}

void RuntimeTypeGraph::indexRecords() {
  byName_.emplace();
  const auto types = bin_.pclntab().typesStart(), etypes = bin_.pclntab().typesEnd();
  if (!types || !etypes || *etypes <= *types) return;
  auto bytes = bin_.elf().readVaddr(*types, *etypes - *types);
  if (!bytes) return;
  const std::span<const uint8_t> region = *bytes;
  // The checks runtimeTypesNamed makes of a record it found by its name:
  // a known kind, a name record inside the section, an interface of 16 bytes.
  for (uint64_t a = (*types + 7) & ~uint64_t{7}; a + kHeader <= *etypes; a += 8) {
    const uint8_t* t = region.data() + (a - *types);
    const uint8_t kind = t[kKindOff] & kKindMask;
    if (kind == 0 || kind > static_cast<uint8_t>(GoType::Kind::UnsafePointer)) continue;
    int32_t str = 0;
    std::memcpy(&str, t + kStrOff, 4);
    if (str <= 0 || static_cast<uint64_t>(str) + 2 >= region.size()) continue;
    uint64_t size = 0;
    std::memcpy(&size, t + kSizeOff, 8);
    if (kind == static_cast<uint8_t>(GoType::Kind::Interface) && size != 16) continue;
    // flags, varint length (one or two bytes), the bytes.
    const uint8_t* n = region.data() + str;
    uint64_t len = n[1] & 0x7f, at = 2;
    if (n[1] & 0x80) {
      if (static_cast<uint64_t>(str) + 3 >= region.size() || (n[2] & 0x80)) continue;
      len |= static_cast<uint64_t>(n[2]) << 7;
      at = 3;
    }
    if (len == 0 || static_cast<uint64_t>(str) + at + len > region.size()) continue;
    std::string name(reinterpret_cast<const char*>(n + at), len);
    if ((t[kTflagOff] & kTflagExtraStar) && name.starts_with('*')) name.erase(0, 1);
    (*byName_)[std::move(name)].push_back(a);
  }
}

const GoType* RuntimeTypeGraph::find(std::string_view name) {
  std::lock_guard lock(mu_);
  return findLocked(name);
}

const GoType* RuntimeTypeGraph::findLocked(std::string_view name) {
  if (auto it = types_.find(name); it != types_.end()) return &it->second;
  if (searched_.contains(name)) return nullptr;
  // Only a qualified name is searched for (a record of `int` or `[]byte` adds
  // nothing the name does not say, and the search reads the whole section).
  const std::string plain = runtimeTypeName(name);
  bool qualified = !plain.empty() && plain.find('.') != std::string::npos && plain[0] != '*' && plain[0] != '[' &&
                   !plain.starts_with("map[") && !plain.starts_with("func(") && !plain.starts_with("chan ");
  const GoType* found = nullptr;
  if (qualified) {
    if (!byName_) indexRecords();
    auto records = byName_->find(plain);
    if (records != byName_->end() && records->second.size() == 1) {
      std::string key = decode(records->second[0], 0);
      if (auto it = types_.find(key); !key.empty() && it != types_.end()) found = &it->second;
    }
  }
  searched_.emplace(std::string(name), found != nullptr);
  return found;
}

std::vector<GoType::Kind> RuntimeTypeGraph::kindsNamed(std::string_view name) {
  std::lock_guard lock(mu_);
  if (!byName_) indexRecords();
  std::vector<GoType::Kind> kinds;
  auto records = byName_->find(runtimeTypeName(name));
  if (records == byName_->end()) return kinds;
  for (uint64_t a : records->second)
    if (auto h = bin_.elf().readVaddr(a, kHeader)) kinds.push_back(static_cast<GoType::Kind>((*h)[kKindOff] & kKindMask));
  return kinds;
}

std::optional<MethodTypes> RuntimeTypeGraph::methodTypes(std::string_view receiver, bool pointer, std::string_view method) {
  std::lock_guard lock(mu_);
  const auto types = bin_.pclntab().typesStart();
  const GoType* named = findLocked(receiver);
  if (!named || !types) return std::nullopt;
  uint64_t addr = recordOf_.at(named);
  GoType::Kind kind = named->kind;
  if (pointer) {
    auto h = bin_.elf().readVaddr(addr, kHeader);
    if (!h) return std::nullopt;
    const int32_t ptr = i32(*h, kPtrToThisOff);
    if (ptr <= 0) return std::nullopt;
    addr = *types + static_cast<uint64_t>(ptr);
    kind = GoType::Kind::Pointer;
  }
  auto h = bin_.elf().readVaddr(addr, kHeader);
  auto tail = uncommonAt(kind);
  if (!h || !tail || !((*h)[kTflagOff] & kTflagUncommon)) return std::nullopt;
  auto u = bin_.elf().readVaddr(addr + *tail, kUncommonSize);
  if (!u) return std::nullopt;
  uint16_t mcount = 0;
  uint32_t moff = 0;
  std::memcpy(&mcount, u->data() + 4, 2);
  std::memcpy(&moff, u->data() + 8, 4);
  auto methods = bin_.elf().readVaddr(addr + *tail + moff, kMethodSize * mcount);
  if (!methods) return std::nullopt;
  for (uint16_t i = 0; i < mcount; i++) {
    const uint64_t m = kMethodSize * i;
    const int32_t name = i32(*methods, m), mtyp = i32(*methods, m + 4);
    if (name <= 0 || mtyp <= 0 || nameAt(*types + static_cast<uint64_t>(name)) != method) continue;
    const uint64_t fn = *types + static_cast<uint64_t>(mtyp);
    auto fh = bin_.elf().readVaddr(fn, kFuncParamsOff);
    if (!fh || (((*fh)[kKindOff] & kKindMask) != static_cast<uint8_t>(GoType::Kind::Func))) return std::nullopt;
    uint16_t in = 0, out = 0;
    std::memcpy(&in, fh->data() + kFuncInOff, 2);
    std::memcpy(&out, fh->data() + kFuncInOff + 2, 2);
    MethodTypes t;
    t.receiver = pointer ? "*" + named->name : named->name;
    t.variadic = out & 0x8000;
    out &= 0x7fff;
    const uint64_t params = fn + kFuncParamsOff + (((*fh)[kTflagOff] & kTflagUncommon) ? kUncommonSize : 0);
    for (uint32_t k = 0; k < static_cast<uint32_t>(in) + out; k++) {
      auto p = bin_.elf().readPointer(params + 8 * k);
      std::string key = p && *p ? decode(*p, 0) : std::string();
      if (key.empty()) return std::nullopt;
      (k < in ? t.params : t.results).push_back(std::move(key));
    }
    return t;
  }
  return std::nullopt;
}

}  // namespace goscope
