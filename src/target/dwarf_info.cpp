#include "target/dwarf_info.hpp"

#include <elfutils/libdw.h>

#include "target/dwarf_reader.hpp"
#include "target/go_signature.hpp"

namespace goscope {

Result<std::optional<DwarfInfo>> DwarfInfo::read(const ElfFile& elf) {
  // Stripped binaries (strip, -ldflags=-w) have no debug sections at all;
  // Go 1.19 writes them SHF_COMPRESSED, older toolchains as .zdebug_*:
  // libdw decompresses both.
  if (!elf.section(".debug_info") && !elf.section(".zdebug_info")) return std::optional<DwarfInfo>{};
  Dwarf* dbg = dwarf_begin_elf(elf.libelf(), DWARF_C_READ, nullptr);
  if (!dbg)
    return fail(ErrorKind::BadTarget, elf.path() + ": cannot read DWARF: " + dwarf_errmsg(dwarf_errno()),
                "the debug sections may be damaged; rebuild the program, or use a stripped-binary mode");
  DwarfInfo info;
  DwarfReader reader(dbg, info);
  auto r = reader.run();
  dwarf_end(dbg);
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
