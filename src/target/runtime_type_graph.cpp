#include "target/runtime_type_graph.hpp"

#include <cstring>

#include "target/go_binary.hpp"
#include "target/runtime_types.hpp"

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
  types_.emplace(key, std::move(t));
  return key;
}

const GoType* RuntimeTypeGraph::find(std::string_view name) {
  std::lock_guard lock(mu_);
  if (auto it = types_.find(name); it != types_.end()) return &it->second;
  if (searched_.contains(name)) return nullptr;
  // Only a qualified name is searched for (a record of `int` or `[]byte` adds
  // nothing the name does not say, and the search reads the whole section).
  const std::string plain = runtimeTypeName(name);
  bool qualified = !plain.empty() && plain.find('.') != std::string::npos && plain[0] != '*' && plain[0] != '[' &&
                   !plain.starts_with("map[") && !plain.starts_with("func(") && !plain.starts_with("chan ");
  const GoType* found = nullptr;
  if (qualified) {
    auto records = runtimeTypesNamed(bin_, name);
    if (records.size() == 1) {
      std::string key = decode(records[0].addr, 0);
      if (auto it = types_.find(key); !key.empty() && it != types_.end()) found = &it->second;
    }
  }
  searched_.emplace(std::string(name), found != nullptr);
  return found;
}

}  // namespace goscope
