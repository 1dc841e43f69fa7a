#include "probe/type_names.hpp"

#include <cstdlib>
#include <cstring>

#include "binary/go_binary.hpp"

namespace goscope {
namespace {

constexpr uint64_t kTypeHeaderSize = 48;  // runtime._type on amd64, Go 1.14 .. 1.26
constexpr uint64_t kTflagOff = 20, kStrOff = 40;
constexpr uint8_t kTflagExtraStar = 1 << 1;
constexpr size_t kMaxName = 4096;  // longer is not a name we want to print

// "go1.19.8" -> 19; 0 when unknown.
int goMinor(const std::string& v) {
  if (v.rfind("go1.", 0) != 0) return 0;
  return std::atoi(v.c_str() + 4);
}

}  // namespace

TypeNamer::TypeNamer(std::shared_ptr<const ElfFile> elf, const Pclntab& pcln, const DwarfInfo* dwarf,
                     const std::string& goVersion)
    : elf_(std::move(elf)) {
  if (!pcln.typesStart() || !pcln.typesEnd()) return;
  types_ = *pcln.typesStart();
  etypes_ = *pcln.typesEnd();
  int minor = goMinor(goVersion);
  nameLen_ = minor >= 17 ? NameLen::Varint : minor > 0 ? NameLen::BigEndian16 : NameLen::Guess;
  if (dwarf) {
    for (const auto& [name, t] : dwarf->types()) {
      if (!t.runtimeTypeOffset) continue;
      // Two DWARF names for one runtime type (aliases): keep one, the same every run.
      auto [it, inserted] = dwarfNames_.emplace(t.runtimeTypeOffset, name);
      if (!inserted && name < it->second) it->second = name;
    }
  }
}

TypeNamer TypeNamer::forBinary(const GoBinary& bin) {
  const BuildInfo* bi = bin.buildInfo();
  return TypeNamer(bin.elfShared(), bin.pclntab(), bin.dwarf(), bi ? bi->goVersion : std::string());
}

TypeNamer TypeNamer::fromNames(std::unordered_map<uint64_t, std::string> byLinkAddress) {
  TypeNamer n;
  n.given_ = std::move(byLinkAddress);
  return n;
}

void TypeNamer::setLoadBias(uint64_t bias) {
  biasOf_ = [bias](uint32_t) { return bias; };
}

void TypeNamer::setLoadBias(std::function<uint64_t(uint32_t pid)> biasOf) { biasOf_ = std::move(biasOf); }

std::optional<std::string> TypeNamer::nameOf(uint64_t runtimeAddr, uint32_t pid) const {
  uint64_t bias = biasOf_ ? biasOf_(pid) : 0;
  return nameAt(runtimeAddr - bias);
}

std::optional<std::string> TypeNamer::nameAt(uint64_t linkAddr) const {
  if (auto it = given_.find(linkAddr); it != given_.end()) return it->second;
  // Only addresses inside the module's type records: anything else (a type
  // made at run time, garbage from a torn read) would be read as nonsense.
  if (!types_ || linkAddr < types_ || linkAddr + kTypeHeaderSize > etypes_) return std::nullopt;
  if (auto it = dwarfNames_.find(linkAddr - types_); it != dwarfNames_.end()) return it->second;
  if (auto it = cache_.find(linkAddr); it != cache_.end()) return it->second;
  auto name = fromFile(linkAddr);
  cache_.emplace(linkAddr, name);
  return name;
}

std::optional<std::string> TypeNamer::fromFile(uint64_t linkAddr) const {
  if (!elf_) return std::nullopt;
  auto hdr = elf_->readVaddr(linkAddr, kTypeHeaderSize);
  if (!hdr) return std::nullopt;
  uint8_t tflag = (*hdr)[kTflagOff];
  int32_t str = 0;
  std::memcpy(&str, hdr->data() + kStrOff, 4);
  if (str <= 0) return std::nullopt;
  uint64_t nameAddr = types_ + static_cast<uint64_t>(str);
  if (nameAddr + 3 > etypes_) return std::nullopt;
  auto head = elf_->readVaddr(nameAddr, std::min<uint64_t>(etypes_ - nameAddr, 16));
  if (!head || head->size() < 3) return std::nullopt;

  auto varint = [&](size_t& used) -> uint64_t {
    uint64_t v = 0;
    for (size_t i = 1; i < head->size() && i <= 4; i++) {
      v |= static_cast<uint64_t>((*head)[i] & 0x7f) << (7 * (i - 1));
      if (!((*head)[i] & 0x80)) {
        used = i;
        return v;
      }
    }
    used = 0;
    return 0;
  };
  uint64_t len = 0, start = 0;
  size_t used = 0;
  if (nameLen_ != NameLen::BigEndian16) {
    len = varint(used);
    start = 1 + used;
  }
  if (nameLen_ == NameLen::BigEndian16 || (nameLen_ == NameLen::Guess && (used == 0 || len == 0))) {
    // Go <= 1.16: two bytes, big endian.
    len = (static_cast<uint64_t>((*head)[1]) << 8) | (*head)[2];
    start = 3;
  }
  if (len == 0 || len > kMaxName || nameAddr + start + len > etypes_) return std::nullopt;
  auto bytes = elf_->readVaddr(nameAddr + start, len);
  if (!bytes) return std::nullopt;
  std::string name(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  if ((tflag & kTflagExtraStar) && name.starts_with("*")) name.erase(0, 1);
  return name;
}

}  // namespace goscope
