#include "target/go_runtime_facts.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>

namespace goscope {

uint32_t goidOffset(const GoBinary& bin) {
  if (const DwarfInfo* d = bin.dwarf())
    if (auto off = d->memberOffset("runtime.g", "goid")) return static_cast<uint32_t>(*off);
  // Stripped: runtime.g has had goid at 152 from Go 1.17 (regabi) through
  // 1.19; later releases may move it, and then goroutine ids read wrong but
  // pairing (keyed by the g pointer) stays right.
  spdlog::debug("{}: no DWARF for runtime.g; assuming goid at offset 152", bin.name());
  return 152;
}

Result<GlobalVariable> findGlobal(const GoBinary& bin, const std::string& name) {
  if (const DwarfInfo* d = bin.dwarf()) {
    if (const GoVariable* v = d->variable(name)) return GlobalVariable{v->name, v->address, v->size, v->type};
  }
  for (const auto& s : bin.elf().symbols())
    if (s.type == STT_OBJECT && s.name == name) return GlobalVariable{s.name, s.value, s.size, {}};
  if (!bin.dwarf() && !bin.hasSymtab())
    return fail(ErrorKind::BadTarget, name + ": " + bin.name() + " is stripped: no DWARF or symbol table to find it");
  return fail(ErrorKind::NoMatch, "no package variable " + name + " in " + bin.name(),
              "qualify it with its package, e.g. main.counter");
}

}  // namespace goscope
