#include "target/go_runtime_facts.hpp"

#include "target/goid_offset.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>

namespace goscope {

uint32_t goidOffset(const GoBinary& bin) {
  GoidOffset found = findGoidOffset(bin);  // DWARF, else runtime.newproc1's code
  if (found.offset) return *found.offset;
  // Neither: goroutine ids may read wrong (pairing, keyed by the g pointer,
  // stays right); `goscope info` says so.
  spdlog::warn("{}: goroutine id offset not found ({}); assuming 152: goroutine ids may be wrong", bin.name(), found.how);
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
