#include "binary/build_ids.hpp"

#include <elf.h>

#include <boost/crc.hpp>
#include <cstring>

namespace goscope {

namespace {

// The descriptor of the first note named `owner` of type `type` in the
// section `section` (an ELF note: namesz, descsz, type, name, desc; name and
// desc each padded to 4 bytes).
std::optional<std::span<const uint8_t>> noteDesc(const ElfFile& elf, const char* section, const char* owner,
                                                 uint32_t type) {
  const ElfFile::Section* s = elf.section(section);
  if (!s || s->type != SHT_NOTE) return std::nullopt;
  auto bytes = elf.sectionBytes(*s);
  const size_t ownerLen = std::strlen(owner) + 1;
  size_t pos = 0;
  auto pad4 = [](size_t n) { return (n + 3) & ~size_t{3}; };
  while (pos + 12 <= bytes.size()) {
    uint32_t namesz, descsz, ntype;
    std::memcpy(&namesz, bytes.data() + pos, 4);
    std::memcpy(&descsz, bytes.data() + pos + 4, 4);
    std::memcpy(&ntype, bytes.data() + pos + 8, 4);
    const size_t name = pos + 12, desc = name + pad4(namesz), end = desc + pad4(descsz);
    if (desc > bytes.size() || desc + descsz > bytes.size()) return std::nullopt;
    // cmd/link writes the name padded: namesz 4 for "Go\0\0" (GNU writes 4 for "GNU\0").
    const bool named = (namesz == ownerLen || namesz == pad4(ownerLen)) && name + namesz <= bytes.size() &&
                       std::memcmp(bytes.data() + name, owner, ownerLen) == 0;
    if (ntype == type && named)
      return bytes.subspan(desc, descsz);
    pos = end;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> goBuildId(const ElfFile& elf) {
  // cmd/link writes one note, owner "Go", type 4 (ELF_NOTE_GOBUILDID_TAG).
  auto d = noteDesc(elf, ".note.go.buildid", "Go", 4);
  if (!d || d->empty()) return std::nullopt;
  return std::string(d->begin(), d->end());
}

std::optional<std::string> gnuBuildId(const ElfFile& elf) {
  auto d = noteDesc(elf, ".note.gnu.build-id", "GNU", NT_GNU_BUILD_ID);
  if (!d || d->empty()) return std::nullopt;
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : *d) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::optional<Debuglink> debuglink(const ElfFile& elf) {
  const ElfFile::Section* s = elf.section(".gnu_debuglink");
  if (!s) return std::nullopt;
  auto bytes = elf.sectionBytes(*s);
  // The name, NUL-terminated, padded to 4 bytes, then the CRC (file byte order: little-endian on x86-64).
  const auto* nul = static_cast<const uint8_t*>(std::memchr(bytes.data(), 0, bytes.size()));
  if (!nul || nul == bytes.data()) return std::nullopt;
  const size_t nameLen = static_cast<size_t>(nul - bytes.data());
  const size_t crcAt = (nameLen + 1 + 3) & ~size_t{3};
  if (crcAt + 4 > bytes.size()) return std::nullopt;
  Debuglink link;
  link.file.assign(reinterpret_cast<const char*>(bytes.data()), nameLen);
  std::memcpy(&link.crc, bytes.data() + crcAt, 4);
  // A bare name only: a '/' would let the section point anywhere.
  if (link.file.find('/') != std::string::npos || link.file == "." || link.file == "..") return std::nullopt;
  return link;
}

uint32_t fileCrc32(const ElfFile& elf) {
  boost::crc_32_type crc;  // the CRC-32 of zlib and of gdb's gnu_debuglink_crc32
  crc.process_bytes(elf.bytes().data(), elf.bytes().size());
  return crc.checksum();
}

}  // namespace goscope
