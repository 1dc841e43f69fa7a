// ElfFile: one ELF executable, mapped read-only, with the views every other
// reader needs (sections, segments, symbols, bytes by virtual address, and the
// R_X86_64_RELATIVE relocations that hold PIE pointers). Backed by libelf so
// that libdw can read DWARF from the same handle.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "binary/file_identity.hpp"
#include "util/result.hpp"
#include "util/unique_fd.hpp"

typedef struct Elf Elf;

namespace goscope {

// Always owned by a shared_ptr (open() is the only factory), so readers that
// keep querying the file later (Pclntab) can hold it alive via shared_from_this.
class ElfFile : public std::enable_shared_from_this<ElfFile> {
 public:
  struct Section {
    std::string name;
    uint32_t type = 0;   // SHT_*
    uint64_t flags = 0;  // SHF_*
    uint64_t addr = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  struct Segment {
    uint32_t type = 0;   // PT_*
    uint32_t flags = 0;  // PF_*
    uint64_t vaddr = 0;
    uint64_t offset = 0;
    uint64_t filesz = 0;
    uint64_t memsz = 0;
    uint64_t align = 0;
  };
  struct Symbol {
    std::string name;
    uint64_t value = 0;
    uint64_t size = 0;
    uint8_t type = 0;  // STT_*
    uint8_t bind = 0;  // STB_*
    uint16_t shndx = 0;
  };

  // A file shorter than its own ELF headers say (a copy cut short, or
  // headers damaged): what they place past its end. Go's own linker writes
  // the section headers at the start; a file an external linker or objcopy
  // wrote has them at the end, where a cut takes them first, and with them
  // every section's name (.gopclntab, .go.buildinfo, .symtab, DWARF).
  struct Truncation {
    uint64_t size = 0;       // bytes in the file
    uint64_t described = 0;  // the furthest end its headers give
    // In file order: "the section headers", "the last 102400 bytes of
    // segment 3 (rw-)", "all of segment 4 (r--)", ".debug_info".
    std::vector<std::string> missing;
  };

  // Errors: NotFound (no such file), BadTarget (not an ELF file, not x86-64).
  // A truncated file opens (truncation() says what it lacks): what it
  // holds is read, what it lacks is not there to read.
  static Result<std::shared_ptr<ElfFile>> open(const std::string& path);

  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& path() const { return path_; }
  // The file as it was when opened (fstat of the fd the analysis reads).
  const FileIdentity& identity() const { return identity_; }
  // A path that names this very open file in this process and its forks,
  // whatever has since been renamed over, or linked to, the path it was
  // opened by: /proc/self/fd/N. What uprobes are attached through.
  std::string handlePath() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Lets the kernel unmap the pages of [offset, offset + len) from this
  // process: they stay in the page cache and come back on the next read
  // (a shared file mapping: MADV_DONTNEED drops nothing but our page-table
  // entries). Peak RSS of a 57 MB binary read whole to hash it (kept
  // under 100 MB). Pointers into bytes() stay valid.
  void releasePages(size_t offset, size_t len) const;
  bool isPie() const { return isDyn_; }  // ET_DYN: loaded at a bias
  uint16_t machine() const { return machine_; }
  uint64_t entryPoint() const { return entry_; }

  const std::vector<Section>& sections() const { return sections_; }
  const Section* section(std::string_view name) const;
  // File bytes of a section (empty for SHT_NOBITS or out-of-file ranges).
  std::span<const uint8_t> sectionBytes(const Section& s) const;

  const std::vector<Segment>& segments() const { return segments_; }
  // The lowest PT_LOAD p_vaddr: the address the file's offset 0 maps to, rounded
  // down to the page (0x400000 for Go executables, PIE or not).
  uint64_t firstLoadVaddr() const;

  // Bytes at a link-time virtual address, from file-backed segment contents.
  std::optional<std::span<const uint8_t>> readVaddr(uint64_t vaddr, size_t len) const;
  std::optional<uint64_t> vaddrToOffset(uint64_t vaddr) const;

  // A pointer-sized value at vaddr as the loader would see it: for PIE the file
  // often holds 0 there and the value lives in a RELATIVE relocation's addend.
  std::optional<uint64_t> readPointer(uint64_t vaddr) const;
  // Every R_X86_64_RELATIVE relocation, r_offset -> r_addend (empty unless PIE):
  // lets readers find where a PIE stores a pointer to a known address.
  const std::unordered_map<uint64_t, uint64_t>& relativeRelocations() const { return relative_; }

  // .symtab symbols; empty when the binary is stripped.
  const std::vector<Symbol>& symbols() const { return symbols_; }
  bool hasSymtab() const { return hasSymtab_; }

  Elf* libelf() const { return elf_; }

  const std::optional<Truncation>& truncation() const { return truncation_; }

 private:
  ElfFile() = default;
  Result<void> load();
  void noteTruncation(uint64_t shoff, uint64_t shnum, uint64_t shentsize);

  std::string path_;
  UniqueFd fd_;
  FileIdentity identity_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Elf* elf_ = nullptr;
  bool isDyn_ = false;
  uint16_t machine_ = 0;
  uint64_t entry_ = 0;
  std::vector<Section> sections_;
  std::vector<Segment> segments_;
  std::vector<Symbol> symbols_;
  bool hasSymtab_ = false;
  std::unordered_map<uint64_t, uint64_t> relative_;  // r_offset -> r_addend
  std::optional<Truncation> truncation_;
};

}  // namespace goscope
