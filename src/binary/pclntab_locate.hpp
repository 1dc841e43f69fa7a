// Where Go's tables sit in an ELF file: the pclntab header, and the
// runtime.firstmoduledata record that points to it. Internal to Pclntab; kept
// apart because finding things (sections, symbols, scans, relocations) is a
// different job from decoding them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "binary/elf_file.hpp"

namespace goscope::pcln {

// The file bytes of a segment: all of them, or of a truncated file
// (ElfFile::truncation) what it still holds; empty when none.
std::span<const uint8_t> segmentBytes(const ElfFile& elf, const ElfFile::Segment& p);

constexpr uint32_t kMagic116 = 0xfffffffa;  // Go 1.16, 1.17
constexpr uint32_t kMagic118 = 0xfffffff0;  // Go 1.18, 1.19
constexpr uint32_t kMagic120 = 0xfffffff1;  // Go 1.20 and later

struct TableLocation {
  uint64_t addr = 0;               // link-time address of the header
  std::span<const uint8_t> bytes;  // header .. end of the table (or of its segment)
  std::string how;                 // which lookup found it, for diagnostics
};

// Header checks that need no ELF: magic, pads, quantum, pointer size 8,
// offsets inside bytes, and the first functab entry agreeing with its _func.
bool plausibleHeader(std::span<const uint8_t> bytes);

// In order: section ".gopclntab"; a section whose name contains "gopclntab"
// (".data.rel.ro.gopclntab" in internally linked PIE); the runtime.pclntab
// symbol (externally linked PIE merges the table into .data.rel.ro); a scan of
// the loaded segments for a plausible header.
std::optional<TableLocation> locateTable(const ElfFile& elf);

// runtime.firstmoduledata, whose first word points to the pclntab header: the
// ".go.module" section (Go 1.26 puts moduledata there), the symbol, or else
// every 8-aligned word in writable segments and every RELATIVE relocation that
// holds tabAddr. A candidate must also hold funcnameAddr (moduledata.funcnametab)
// at +8 and textStart (moduledata.text) at +176, which no other pointer to the
// header does by accident.
std::optional<uint64_t> locateModuledata(const ElfFile& elf, uint64_t tabAddr, uint64_t funcnameAddr,
                                         uint64_t textStart);

}  // namespace goscope::pcln
