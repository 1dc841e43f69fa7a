#include "binary/runtime_types.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "binary/elf_file.hpp"
#include "binary/go_binary.hpp"

namespace goscope {
namespace {

// runtime._type on amd64, Go 1.14 .. 1.27 (docs/go-runtime.md).
constexpr uint64_t kTypeHeaderSize = 48;
constexpr uint64_t kSizeOff = 0, kTflagOff = 20, kKindOff = 23, kStrOff = 40;
constexpr uint8_t kTflagExtraStar = 1 << 1;
constexpr uint8_t kKindMask = 0x1f;  // the low bits; the rest are flags (direct iface, GC program)
constexpr uint8_t kMaxKind = static_cast<uint8_t>(GoType::Kind::UnsafePointer);

// Where a name record can start for name bytes at `at` of length `len`: a
// flags byte, then the length as a varint (Go >= 1.17) or as two big-endian
// bytes (before). Both are tried: only a real record's _type points there.
void nameStarts(std::span<const uint8_t> region, size_t at, size_t len, std::set<uint32_t>& out) {
  // varint: one byte below 128, two below 16384.
  if (len < 128 && at >= 2 && region[at - 1] == len) out.insert(static_cast<uint32_t>(at - 2));
  if (len >= 128 && len < 16384 && at >= 3 && region[at - 2] == ((len & 0x7f) | 0x80) && region[at - 1] == (len >> 7))
    out.insert(static_cast<uint32_t>(at - 3));
  if (len < 65536 && at >= 3 && region[at - 2] == (len >> 8) && region[at - 1] == (len & 0xff))
    out.insert(static_cast<uint32_t>(at - 3));
}

// Offsets from `types` of the name records spelling `text`.
std::set<uint32_t> nameOffsets(std::span<const uint8_t> region, std::string_view text) {
  std::set<uint32_t> out;
  auto it = region.begin();
  while (true) {
    it = std::search(it, region.end(), text.begin(), text.end());
    if (it == region.end()) break;
    size_t at = static_cast<size_t>(it - region.begin());
    nameStarts(region, at, text.size(), out);
    ++it;
  }
  return out;
}

}  // namespace

std::string runtimeTypeName(std::string_view name) {
  size_t args = name.find('[');  // a generic's type arguments keep their paths
  size_t slash = name.substr(0, args).rfind('/');
  return std::string(slash == std::string_view::npos ? name : name.substr(slash + 1));
}

std::vector<RuntimeType> runtimeTypesNamed(const ElfFile& elf, uint64_t types, uint64_t etypes,
                                           std::string_view name) {
  std::vector<RuntimeType> out;
  if (!types || etypes <= types || name.empty()) return out;
  auto bytes = elf.readVaddr(types, etypes - types);
  if (!bytes) return out;
  std::span<const uint8_t> region = *bytes;
  const std::string plain = runtimeTypeName(name);
  // A named type's own name is usually stored as `*T` with tflagExtraStar,
  // shared with its pointer type *T (whose record has no such flag).
  const std::set<uint32_t> starred = nameOffsets(region, "*" + plain);
  const std::set<uint32_t> bare = nameOffsets(region, plain);
  if (starred.empty() && bare.empty()) return out;
  for (uint64_t a = (types + 7) & ~uint64_t{7}; a + kTypeHeaderSize <= etypes; a += 8) {
    const uint8_t* t = region.data() + (a - types);
    int32_t str;
    std::memcpy(&str, t + kStrOff, 4);
    if (str <= 0) continue;
    bool extraStar = t[kTflagOff] & kTflagExtraStar;
    if (!(extraStar ? starred : bare).contains(static_cast<uint32_t>(str))) continue;
    uint8_t kind = t[kKindOff] & kKindMask;
    if (kind == 0 || kind > kMaxKind) continue;
    RuntimeType r;
    r.addr = a;
    r.kind = static_cast<GoType::Kind>(kind);
    std::memcpy(&r.size, t + kSizeOff, 8);
    // An interface is two words: anything else at a name match is not a _type.
    if (r.kind == GoType::Kind::Interface && r.size != 16) continue;
    out.push_back(r);
  }
  return out;
}

std::vector<RuntimeType> runtimeTypesNamed(const GoBinary& bin, std::string_view name) {
  const Pclntab& p = bin.pclntab();
  if (!p.typesStart() || !p.typesEnd()) return {};
  return runtimeTypesNamed(*bin.elfShared(), *p.typesStart(), *p.typesEnd(), name);
}

}  // namespace goscope
