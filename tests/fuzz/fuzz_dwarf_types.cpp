// Fuzz target: DWARF of a Go binary as goscope reads it through libdw
// (src/binary/dwarf_reader.cpp, dwarf_types.cpp): compile units, functions,
// parameters and their locations, inlined calls, package variables, and the
// type DIEs built into GoTypes; then what is built on them (type shapes and
// ABI layouts in src/probe/, signatures).
//
// Input: u16 little-endian length N, N bytes of .debug_abbrev, the rest is
// .debug_info (seeds: tools/make_dwarf_seed.py). The harness wraps them in a
// minimal x86-64 ELF written to a memfd and opened by path, as goscope opens
// a binary. Crashes inside libdw itself would be elfutils' bugs; goscope's
// share is what it does with what libdw hands back.
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe/abi_layout.hpp"
#include "probe/type_shape.hpp"
#include "binary/dwarf_info.hpp"
#include "binary/elf_file.hpp"

using namespace goscope;

namespace {

template <class T>
void put(std::vector<uint8_t>& out, size_t off, const T& v) {
  if (out.size() < off + sizeof v) out.resize(off + sizeof v);
  std::memcpy(out.data() + off, &v, sizeof v);
}

// ELF header, the two sections' bytes, their names, then the section headers.
std::vector<uint8_t> wrapInElf(const uint8_t* abbrev, size_t abbrevSize, const uint8_t* info, size_t infoSize) {
  static const char kNames[] = "\0.debug_abbrev\0.debug_info\0.shstrtab";  // offsets 0, 1, 15, 27
  std::vector<uint8_t> out(sizeof(Elf64_Ehdr), 0);
  uint64_t abbrevOff = out.size();
  out.insert(out.end(), abbrev, abbrev + abbrevSize);
  uint64_t infoOff = out.size();
  out.insert(out.end(), info, info + infoSize);
  uint64_t strOff = out.size();
  out.insert(out.end(), kNames, kNames + sizeof kNames);
  out.resize((out.size() + 7) & ~size_t{7}, 0);
  uint64_t shOff = out.size();
  auto shdr = [&](uint32_t name, uint32_t type, uint64_t off, uint64_t size) {
    Elf64_Shdr s{};
    s.sh_name = name, s.sh_type = type, s.sh_offset = off, s.sh_size = size, s.sh_addralign = 1;
    put(out, out.size(), s);
  };
  shdr(0, SHT_NULL, 0, 0);
  shdr(1, SHT_PROGBITS, abbrevOff, abbrevSize);
  shdr(15, SHT_PROGBITS, infoOff, infoSize);
  shdr(27, SHT_STRTAB, strOff, sizeof kNames);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = shOff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 4;
  eh.e_shstrndx = 3;
  put(out, 0, eh);
  return out;
}

int memfd() {
  static int fd = [] {
    int f = ::memfd_create("fuzz_dwarf_types", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t abbrevSize = std::min<size_t>(data[0] | data[1] << 8, size - 2);
  auto image = wrapInElf(data + 2, abbrevSize, data + 2 + abbrevSize, size - 2 - abbrevSize);
  int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, image.data(), image.size(), 0) != static_cast<ssize_t>(image.size()))
    std::abort();
  auto elf = ElfFile::open("/proc/self/fd/" + std::to_string(fd));
  if (!elf) std::abort();  // the wrapper itself is always a valid ELF
  auto dwarf = DwarfInfo::read(**elf);
  if (!dwarf || !*dwarf) return 0;
  const DwarfInfo& info = **dwarf;

  size_t n = 0;
  for (const auto& fn : info.functions()) {
    if (n++ == 64) break;  // bounded work per input
    (void)info.signature(fn);
    (void)info.functionContaining(fn.lowPc);
    if (auto layout = layoutFunction(info, fn))
      for (const auto& v : *layout) (void)describeLayout(v);
    for (const auto& p : fn.params)
      for (const auto& r : p.locations) (void)describe(r.pieces);
  }
  ShapeBuilder shapes(lookupIn(info));
  n = 0;
  for (const auto& [name, type] : info.types()) {
    if (n++ == 64) break;
    (void)shapes.build(name);
    for (const auto& f : type.fields) (void)info.memberOffset(name, f.name);
  }
  for (const auto& v : info.variables()) (void)info.variable(v.name);
  return 0;
}
