// Fuzz target: the Go function table (.gopclntab) as goscope reads it from a
// target binary (src/binary/pclntab*.cpp): header, function records, pc-value
// tables, file tables, inline trees.
//
// Input: the bytes of a .gopclntab section. Pclntab reads through an
// ElfFile, which maps a file, so the harness wraps the bytes in a minimal
// x86-64 ELF (a read-only segment holding the table in section .gopclntab,
// then a writable segment holding a runtime.firstmoduledata-like record
// that points back to it, so moduledata lookup, runtime types bounds and
// inline trees (gofunc = the table itself) are reached too) and writes it to
// a memfd, opened by path as goscope opens a binary.
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "binary/pclntab.hpp"

using namespace goscope;

namespace {

constexpr uint64_t kBase = 0x400000;   // where file offset 0 is loaded
constexpr uint64_t kTabOff = 0x200;    // .gopclntab: after the ELF and program headers
constexpr uint64_t kTextAddr = 0x401000;
constexpr size_t kModuledataSize = 336;

uint64_t le64(const uint8_t* p, size_t size, size_t off) {
  uint64_t v = 0;
  if (off + 8 <= size) std::memcpy(&v, p + off, 8);
  return v;
}

template <class T>
void put(std::vector<uint8_t>& out, size_t off, const T& v) {
  if (out.size() < off + sizeof v) out.resize(off + sizeof v);
  std::memcpy(out.data() + off, &v, sizeof v);
}

std::vector<uint8_t> wrapInElf(const uint8_t* tab, size_t size) {
  const uint64_t tabAddr = kBase + kTabOff;
  const uint64_t mdOff = (kTabOff + size + 7) & ~uint64_t{7};
  const uint64_t mdAddr = kBase + mdOff;
  const uint64_t strOff = mdOff + kModuledataSize;
  static const char kNames[] = "\0.text\0.gopclntab\0.go.module\0.shstrtab";  // offsets 0,1,7,18,29
  const uint64_t shOff = (strOff + sizeof kNames + 7) & ~uint64_t{7};

  std::vector<uint8_t> out(kTabOff, 0);
  out.insert(out.end(), tab, tab + size);

  // The record Pclntab::read looks for: the table's address, funcnametab's,
  // runtime.text at +176, and types/etypes/rodata/gofunc where each format
  // keeps them (see kGofuncOff118/120 and kTypesOff116 in pclntab.cpp).
  uint32_t magic = size >= 4 ? static_cast<uint32_t>(tab[0] | tab[1] << 8 | tab[2] << 16 | uint32_t{tab[3]} << 24) : 0;
  bool v116 = magic == 0xfffffffa, v118 = magic == 0xfffffff0;
  uint64_t funcnameOff = le64(tab, size, v116 ? 24 : 32);
  uint64_t textStart = v116 ? kTextAddr : le64(tab, size, 24);
  if (textStart == 0) textStart = kTextAddr;
  std::vector<uint8_t> md(kModuledataSize, 0);
  put(md, 0, tabAddr);
  put(md, 8, tabAddr + funcnameOff);
  put(md, 176, textStart);
  uint64_t typesAt = v116 || v118 ? 280 : 296;
  put(md, typesAt, tabAddr);
  put(md, typesAt + 8, tabAddr + size);
  if (!v116) {
    put(md, typesAt + 16, tabAddr);  // rodata
    put(md, typesAt + 24, tabAddr);  // gofunc: inline trees read from the table's own bytes
  }
  out.resize(mdOff, 0);
  out.insert(out.end(), md.begin(), md.end());
  out.insert(out.end(), kNames, kNames + sizeof kNames);
  out.resize(shOff, 0);

  auto shdr = [&](uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off, uint64_t sz) {
    Elf64_Shdr s{};
    s.sh_name = name, s.sh_type = type, s.sh_flags = flags, s.sh_addr = addr, s.sh_offset = off, s.sh_size = sz;
    s.sh_addralign = 1;
    put(out, out.size(), s);
  };
  shdr(0, SHT_NULL, 0, 0, 0, 0);
  shdr(1, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, kTextAddr, 0, 0);
  shdr(7, SHT_PROGBITS, SHF_ALLOC, tabAddr, kTabOff, size);
  shdr(18, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, mdAddr, mdOff, kModuledataSize);
  shdr(29, SHT_STRTAB, 0, 0, strOff, sizeof kNames);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_shoff = shOff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 5;
  eh.e_shstrndx = 4;
  put(out, 0, eh);
  Elf64_Phdr ro{PT_LOAD, PF_R, 0, kBase, kBase, mdOff, mdOff, 0x1000};
  Elf64_Phdr rw{PT_LOAD, PF_R | PF_W, mdOff, mdAddr, mdAddr, kModuledataSize, kModuledataSize, 0x1000};
  put(out, sizeof(Elf64_Ehdr), ro);
  put(out, sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), rw);
  return out;
}

int memfd() {
  static int fd = [] {
    int f = ::memfd_create("fuzz_pclntab", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto image = wrapInElf(data, size);
  int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, image.data(), image.size(), 0) != static_cast<ssize_t>(image.size()))
    std::abort();
  auto elf = ElfFile::open("/proc/self/fd/" + std::to_string(fd));
  if (!elf) std::abort();  // the wrapper itself is always a valid ELF
  auto tab = Pclntab::read(**elf);
  if (!tab) return 0;

  (void)tab->goVersionFormat();
  (void)tab->functionNamed("main.main");
  size_t n = 0;
  for (const auto& fn : tab->functions()) {
    if (n++ == 64) break;  // bounded work per input: a table may claim 16M functions
    (void)tab->functionAt(fn.entry);
    (void)tab->symbolize(fn.entry);
    (void)tab->symbolize(fn.entry + (fn.end - fn.entry) / 2);
    for (const auto& call : tab->inlinedCalls(fn)) (void)tab->symbolize(call.parentPc);
  }
  return 0;
}
