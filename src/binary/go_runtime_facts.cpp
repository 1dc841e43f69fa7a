#include "binary/go_runtime_facts.hpp"

#include <cstdio>

#include "binary/goid_offset.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>

namespace goscope {

uint32_t goidOffset(const GoBinary& bin) {
  GoidOffsetInUse used = goidOffsetInUse(bin);  // DWARF, else runtime.newproc1's code, else assumed
  // Assumed: goroutine ids may read wrong (pairing, keyed by the g pointer,
  // stays right); `goscope info` says so.
  if (used.assumed) spdlog::warn("{}: goroutine id offset {}: goroutine ids may be wrong", bin.name(), used.how);
  return used.offset;
}

Result<GlobalVariable> findGlobal(const GoBinary& bin, const std::string& name) {
  // Only the top-level DIEs, for this name (`count --read` and a
  // direct read parsed the whole DWARF, ~200 ms on a big binary, for one variable).
  if (const DwarfInfo* d = bin.dwarfGlobals({name})) {
    if (const GoVariable* v = d->variable(name)) return GlobalVariable{v->name, v->address, v->size, v->type};
  }
  for (const auto& s : bin.elf().symbols())
    if (s.type == STT_OBJECT && s.name == name) return GlobalVariable{s.name, s.value, s.size, {}};
  if (!bin.hasDwarf() && !bin.hasSymtab())
    return fail(ErrorKind::BadTarget, name + ": " + bin.name() + " is stripped: no DWARF or symbol table to find it");
  return fail(ErrorKind::NoMatch, "no package variable " + name + " in " + bin.name(),
              "qualify it with its package, e.g. main.counter");
}

}  // namespace goscope

namespace goscope {

std::string stackAbiRefusal(const GoBinary& bin) {
  const BuildInfo* bi = bin.buildInfo();
  if (!bi) return {};
  int major = 0, minor = 0;
  if (std::sscanf(bi->goVersion.c_str(), "go%d.%d", &major, &minor) != 2 || major != 1 || minor >= 17) return {};
  return "built by " + bi->goVersion +
         ", which passes arguments on the stack and keeps the goroutine in thread-local storage: goscope reads "
         "arguments, results and goroutines the Go 1.17+ way (registers, R14) and would print garbage";
}

}  // namespace goscope
