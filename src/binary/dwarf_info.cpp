#include "binary/dwarf_info.hpp"

#include <elf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstring>

#include "binary/dwarf_reader.hpp"
#include "binary/go_signature.hpp"

namespace goscope {

namespace {

// Opens the ELF's DWARF through libdw, lets `fill` read it into a new
// DwarfInfo, and closes it.
template <class Fill>
Result<std::optional<DwarfInfo>> readWith(const ElfFile& elf, Fill fill) {
  // Stripped binaries (strip, -ldflags=-w) have no debug sections at all;
  // Go 1.19 writes them SHF_COMPRESSED, older toolchains as .zdebug_*:
  // libdw decompresses both.
  if (!elf.section(".debug_info") && !elf.section(".zdebug_info")) return std::optional<DwarfInfo>{};
  Dwarf* dbg = dwarf_begin_elf(elf.libelf(), DWARF_C_READ, nullptr);
  if (!dbg)
    return fail(ErrorKind::BadTarget, elf.path() + ": cannot read DWARF: " + dwarf_errmsg(dwarf_errno()),
                "the debug sections may be damaged; rebuild the program, or use a stripped-binary mode");
  DwarfInfo info;
  Result<void> r = fill(dbg, info);
  dwarf_end(dbg);
  if (!r) return fail(r.error().kind, elf.path() + ": " + r.error().message, r.error().hint);
  return std::optional<DwarfInfo>(std::move(info));
}

}  // namespace

Result<std::optional<DwarfInfo>> DwarfInfo::read(const ElfFile& elf) {
  return readWith(elf, [](Dwarf* dbg, DwarfInfo& info) { return DwarfReader(dbg, info).run(); });
}

namespace {

// An ELF image in memory holding copies of the debug sections a scan of
// top-level DIEs reads (.debug_info, .debug_abbrev, their string tables),
// as they are in the file (compressed or not). libdw decompresses every
// debug section it finds when it opens an ELF; on the fixtures the line
// table, location lists, ranges and frames are ~70% of the bytes to inflate
// and zlib was ~40% of a direct read's CPU. Empty when there is no .debug_info.
std::vector<char> topLevelDwarfImage(const ElfFile& elf) {
  static const char* const kKept[] = {"info", "abbrev", "str", "line_str", "str_offsets", "addr"};
  std::vector<const ElfFile::Section*> kept;
  for (const char* k : kKept) {
    const ElfFile::Section* s = elf.section(std::string(".debug_") + k);
    if (!s) s = elf.section(std::string(".zdebug_") + k);
    if (s && s->type != SHT_NOBITS) kept.push_back(s);
  }
  if (kept.empty() || kept.front()->name.find("info") == std::string::npos) return {};
  auto align8 = [](std::vector<char>& v) { v.resize((v.size() + 7) & ~size_t{7}); };
  std::vector<char> img(sizeof(Elf64_Ehdr));
  std::vector<Elf64_Shdr> headers(1);  // [0]: the null section
  std::string names(1, '\0');
  for (const ElfFile::Section* s : kept) {
    auto bytes = elf.sectionBytes(*s);
    if (bytes.size() != s->size) return {};
    align8(img);
    Elf64_Shdr h{};
    h.sh_name = static_cast<Elf64_Word>(names.size());
    h.sh_type = s->type;
    h.sh_flags = s->flags;
    h.sh_offset = img.size();
    h.sh_size = s->size;
    h.sh_addralign = (s->flags & SHF_COMPRESSED) ? 8 : 1;
    headers.push_back(h);
    names += s->name;
    names += '\0';
    img.insert(img.end(), bytes.begin(), bytes.end());
  }
  Elf64_Shdr strtab{};
  strtab.sh_name = static_cast<Elf64_Word>(names.size());
  names += ".shstrtab";
  names += '\0';
  strtab.sh_type = SHT_STRTAB;
  strtab.sh_offset = img.size();
  strtab.sh_size = names.size();
  strtab.sh_addralign = 1;
  headers.push_back(strtab);
  img.insert(img.end(), names.begin(), names.end());
  align8(img);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shoff = img.size();
  eh.e_shnum = static_cast<Elf64_Half>(headers.size());
  eh.e_shstrndx = static_cast<Elf64_Half>(headers.size() - 1);
  std::memcpy(img.data(), &eh, sizeof eh);
  const char* h = reinterpret_cast<const char*>(headers.data());
  img.insert(img.end(), h, h + headers.size() * sizeof(Elf64_Shdr));
  return img;
}

}  // namespace

Result<std::optional<DwarfInfo>> DwarfInfo::readGlobals(const ElfFile& elf, const std::vector<std::string>& names) {
  if (!elf.section(".debug_info") && !elf.section(".zdebug_info")) return std::optional<DwarfInfo>{};
  auto scan = [&](Dwarf* dbg, DwarfInfo& info) { return DwarfReader(dbg, info).runGlobals(names); };
  std::vector<char> img = topLevelDwarfImage(elf);
  Elf* e = img.empty() ? nullptr : elf_memory(img.data(), img.size());
  Dwarf* dbg = e ? dwarf_begin_elf(e, DWARF_C_READ, nullptr) : nullptr;
  if (!dbg) {  // not expected: read the file's own ELF as read() does
    if (e) elf_end(e);
    return readWith(elf, scan);
  }
  DwarfInfo info;
  Result<void> r = scan(dbg, info);
  dwarf_end(dbg);
  elf_end(e);
  if (!r) return fail(r.error().kind, elf.path() + ": " + r.error().message, r.error().hint);
  return std::optional<DwarfInfo>(std::move(info));
}

const DwarfFunction* DwarfInfo::function(std::string_view name) const {
  auto it = functionByName_.find(std::string(name));
  return it == functionByName_.end() ? nullptr : &functions_[it->second];
}

const DwarfFunction* DwarfInfo::functionAt(uint64_t entry) const {
  auto it = functionByEntry_.find(entry);
  return it == functionByEntry_.end() ? nullptr : &functions_[it->second];
}

const DwarfFunction* DwarfInfo::functionContaining(uint64_t pc) const {
  auto it = functionByPc_.upper_bound(pc);
  if (it == functionByPc_.begin()) return nullptr;
  const DwarfFunction& f = functions_[std::prev(it)->second];
  return pc < f.highPc ? &f : nullptr;
}

std::string DwarfInfo::signature(const DwarfFunction& fn) const {
  std::vector<SignatureParam> ps;
  ps.reserve(fn.params.size());
  for (const auto& p : fn.params) ps.push_back({p.name, p.type, p.isResult});
  return formatSignature(fn.name, ps);
}

const GoType* DwarfInfo::type(std::string_view name) const {
  auto it = types_.find(std::string(name));
  return it == types_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> DwarfInfo::memberOffset(std::string_view typeName, std::string_view member) const {
  const GoType* t = type(typeName);
  if (!t) return std::nullopt;
  for (const auto& f : t->fields)
    if (f.name == member) return f.offset;
  return std::nullopt;
}

const std::string* DwarfInfo::typeAtRuntimeOffset(uint64_t offset) const {
  auto it = typeByRuntimeOffset_.find(offset);
  return it == typeByRuntimeOffset_.end() ? nullptr : &it->second;
}

const GoVariable* DwarfInfo::variable(std::string_view name) const {
  auto it = variableByName_.find(std::string(name));
  return it == variableByName_.end() ? nullptr : &variables_[it->second];
}

const LocationRange* locationAtEntry(const DwarfParam& param, uint64_t entryPc) {
  for (const auto& r : param.locations)
    if (r.contains(entryPc)) return &r;
  return nullptr;
}

}  // namespace goscope
