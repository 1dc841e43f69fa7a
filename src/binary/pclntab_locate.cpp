#include "binary/pclntab_locate.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace goscope::pcln {
namespace {

uint32_t le32(std::span<const uint8_t> b, uint64_t off) {
  uint32_t v = 0;
  if (off + 4 <= b.size()) std::memcpy(&v, b.data() + off, 4);
  return v;
}
uint64_t le64(std::span<const uint8_t> b, uint64_t off) {
  uint64_t v = 0;
  if (off + 8 <= b.size()) std::memcpy(&v, b.data() + off, 8);
  return v;
}

// Bytes from vaddr to the end of its PT_LOAD segment's file contents.
std::optional<std::pair<uint64_t, std::span<const uint8_t>>> tailFrom(const ElfFile& elf, uint64_t vaddr,
                                                                      uint64_t maxLen) {
  for (const auto& p : elf.segments()) {
    if (p.type != PT_LOAD || vaddr < p.vaddr || vaddr >= p.vaddr + p.filesz) continue;
    uint64_t len = std::min<uint64_t>(p.vaddr + p.filesz - vaddr, maxLen);
    auto b = elf.readVaddr(vaddr, len);
    if (!b) return std::nullopt;
    return std::make_pair(vaddr, *b);
  }
  return std::nullopt;
}

const ElfFile::Symbol* findSymbol(const ElfFile& elf, std::string_view name) {
  for (const auto& s : elf.symbols())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

std::span<const uint8_t> segmentBytes(const ElfFile& elf, const ElfFile::Segment& p) {
  const auto all = elf.bytes();
  if (p.offset >= all.size()) return {};
  return all.subspan(p.offset, std::min<uint64_t>(p.filesz, all.size() - p.offset));
}

bool plausibleHeader(std::span<const uint8_t> b) {
  if (b.size() < 72) return false;
  uint32_t magic = le32(b, 0);
  if (magic != kMagic116 && magic != kMagic118 && magic != kMagic120) return false;
  if (b[4] != 0 || b[5] != 0 || (b[6] != 1 && b[6] != 2 && b[6] != 4) || b[7] != 8) return false;
  bool v116 = magic == kMagic116;
  uint64_t nfunc = le64(b, 8);
  if (nfunc == 0 || nfunc > (1u << 24)) return false;
  // Word indexes of the five table offsets: funcname, cu, filetab, pctab, pcln.
  int first = v116 ? 2 : 3;
  uint64_t prev = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t off = le64(b, 8 + 8 * (first + i));
    if (off < prev || off >= b.size()) return false;
    prev = off;
  }
  uint64_t pcln = prev;
  uint64_t field = v116 ? 8 : 4;
  if (pcln + (2 * nfunc + 1) * field > b.size()) return false;
  // The first functab entry and the _func it points to name the same entry.
  uint64_t funcOff = v116 ? le64(b, pcln + 8) : le32(b, pcln + 4);
  if (pcln + funcOff + field > b.size()) return false;
  return v116 ? le64(b, pcln) == le64(b, pcln + funcOff) : le32(b, pcln) == le32(b, pcln + funcOff);
}

std::optional<TableLocation> locateTable(const ElfFile& elf) {
  auto fromSection = [&](const ElfFile::Section& s, const char* how) -> std::optional<TableLocation> {
    auto bytes = elf.sectionBytes(s);
    if (!plausibleHeader(bytes)) return std::nullopt;
    return TableLocation{s.addr, bytes, how};
  };
  if (const auto* s = elf.section(".gopclntab"))
    if (auto t = fromSection(*s, "section .gopclntab")) return t;
  for (const auto& s : elf.sections())
    if (s.name.find("gopclntab") != std::string::npos)
      if (auto t = fromSection(s, "section *gopclntab")) return t;

  if (const auto* sym = findSymbol(elf, "runtime.pclntab")) {
    uint64_t maxLen = UINT64_MAX;
    if (const auto* end = findSymbol(elf, "runtime.epclntab"); end && end->value > sym->value)
      maxLen = end->value - sym->value;
    if (auto t = tailFrom(elf, sym->value, maxLen); t && plausibleHeader(t->second))
      return TableLocation{t->first, t->second, "symbol runtime.pclntab"};
  }

  // Last resort: the header is 8-aligned; look in non-executable segments first
  // (where Go's linkers put it), then in the rest.
  for (bool wantExec : {false, true}) {
    for (const auto& p : elf.segments()) {
      if (p.type != PT_LOAD || ((p.flags & PF_X) != 0) != wantExec) continue;
      // (of a truncated file, what it still holds)
      const std::span<const uint8_t> seg = segmentBytes(elf, p);
      if (seg.empty()) continue;
      for (uint64_t off = (8 - p.vaddr % 8) % 8; off + 72 <= seg.size(); off += 8) {
        uint32_t m = le32(seg, off);
        if (m != kMagic116 && m != kMagic118 && m != kMagic120) continue;
        auto tail = seg.subspan(off);
        if (plausibleHeader(tail)) return TableLocation{p.vaddr + off, tail, "segment scan"};
      }
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> locateModuledata(const ElfFile& elf, uint64_t tabAddr, uint64_t funcnameAddr,
                                         uint64_t textStart) {
  auto valid = [&](uint64_t md) {
    return elf.readPointer(md) == tabAddr && elf.readPointer(md + 8) == funcnameAddr &&
           elf.readPointer(md + 176) == textStart;
  };
  if (const auto* s = elf.section(".go.module"); s && valid(s->addr)) return s->addr;
  if (const auto* sym = findSymbol(elf, "runtime.firstmoduledata"); sym && valid(sym->value)) return sym->value;

  std::vector<uint64_t> candidates;
  for (const auto& [where, target] : elf.relativeRelocations())
    if (target == tabAddr) candidates.push_back(where);
  for (const auto& p : elf.segments()) {
    if (p.type != PT_LOAD || (p.flags & PF_W) == 0) continue;
    // (of a truncated file, what it still holds)
    const std::span<const uint8_t> seg = segmentBytes(elf, p);
    if (seg.empty()) continue;
    for (uint64_t off = (8 - p.vaddr % 8) % 8; off + 8 <= seg.size(); off += 8)
      if (le64(seg, off) == tabAddr) candidates.push_back(p.vaddr + off);
  }
  for (uint64_t md : candidates)
    if (valid(md)) return md;
  return std::nullopt;
}

}  // namespace goscope::pcln
