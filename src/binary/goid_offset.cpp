#include "binary/goid_offset.hpp"

#include <cstdio>
#include <set>
#include <vector>

#include "binary/disasm.hpp"
#include "binary/x86_insn.hpp"

namespace goscope {

namespace {

struct Insn {
  uint64_t addr = 0;
  x86::InsnView view;
};

// `mov r64, m64` (8B), `mov m64, r64` (89), `incq m64` (FF /0), each with REX.W.
enum class Op { Load, Store, IncMem, Other };

struct Decoded {
  Op op = Op::Other;
  uint8_t reg = 0;  // Load: destination; Store: source
  x86::ModRM mem;
};

Decoded decode(const x86::InsnView& v) {
  Decoded d;
  if (v.encoding != x86::Encoding::Legacy || v.map != x86::OpMap::Primary || !v.rexW() || v.prefixes) return d;
  if (v.opcode != 0x8b && v.opcode != 0x89 && v.opcode != 0xff) return d;
  auto m = v.modrm();
  if (!m || m->isRegister() || m->ripRelative || m->index || !m->base) return d;
  if (v.opcode == 0xff) {
    if ((m->reg & 7) != 0) return d;  // FF /0 is inc
    d.op = Op::IncMem;
  } else {
    d.op = v.opcode == 0x8b ? Op::Load : Op::Store;
    d.reg = m->reg;
  }
  d.mem = *m;
  return d;
}

// Does `v` write general-purpose register `reg` (conservatively: any
// instruction whose ModRM reg field or register operand names it, or a
// call)? Used to stop looking for the store once the loaded value may be gone.
bool mayClobber(const x86::InsnView& v, uint8_t reg) {
  if (v.isLegacy(x86::OpMap::Primary, 0xe8)) return true;  // call
  if (v.encoding != x86::Encoding::Legacy) return false;
  auto m = v.modrm();
  return m && (m->reg == reg || (m->isRegister() && m->rm == reg));
}

}  // namespace

GoidOffset goidOffsetFromNewproc1(std::span<const uint8_t> code, uint64_t entry, const FunctionCode& fc) {
  std::vector<Insn> insns;
  for (uint64_t a = entry; a < fc.bodyEnd;) {
    uint64_t next = a + 1;
    while (next < fc.bodyEnd && !isInstructionBoundary(fc, next)) next++;
    if (next - entry > code.size()) break;
    auto v = x86::parseInsn(code.subspan(a - entry, next - a));
    if (v) insns.push_back({a, *v});
    a = next;
  }
  // p.goidcache: the field newproc1 increments in memory.
  std::set<int32_t> counters;
  for (const auto& i : insns)
    if (auto d = decode(i.view); d.op == Op::IncMem) counters.insert(d.mem.disp);
  // newg.goid = p.goidcache: a load of that field, then a store of the same
  // register into another object before the register changes.
  std::set<int32_t> found;
  uint64_t where = 0;
  for (size_t k = 0; k < insns.size(); k++) {
    auto load = decode(insns[k].view);
    if (load.op != Op::Load || !counters.count(load.mem.disp)) continue;
    for (size_t j = k + 1; j < insns.size() && j <= k + 4; j++) {
      auto store = decode(insns[j].view);
      if (store.op == Op::Store && store.reg == load.reg && store.mem.base != x86::RSP &&
          store.mem.base != load.mem.base && store.mem.disp > 0) {
        found.insert(store.mem.disp);
        where = insns[j].addr;
        break;
      }
      if (mayClobber(insns[j].view, load.reg)) break;
    }
  }
  GoidOffset out;
  if (found.size() != 1) {
    out.how = found.empty() ? "runtime.newproc1 has no store of p.goidcache into the new g"
                            : "runtime.newproc1 stores p.goidcache at several offsets";
    return out;
  }
  const int32_t off = *found.begin();
  if (off % 8 != 0 || off < 64 || off > 1024) {
    out.how = "runtime.newproc1's store of p.goidcache is at an implausible offset " + std::to_string(off);
    return out;
  }
  char at[64];
  std::snprintf(at, sizeof at, "runtime.newproc1's store at 0x%llx", static_cast<unsigned long long>(where));
  out.offset = static_cast<uint32_t>(off);
  out.how = at;
  return out;
}

GoidOffset findGoidOffset(const GoBinary& bin) {
  GoidOffset fromCode;
  if (const GoFunction* fn = bin.pclntab().functionNamed("runtime.newproc1")) {
    auto fc = bin.analyze(*fn);
    auto bytes = bin.elf().readVaddr(fn->entry, fn->end - fn->entry);
    if (fc && bytes) fromCode = goidOffsetFromNewproc1(*bytes, fn->entry, *fc);
    else fromCode.how = "runtime.newproc1 could not be read";
  } else {
    fromCode.how = "no runtime.newproc1";
  }
  if (const DwarfInfo* d = bin.dwarf())
    if (auto off = d->memberOffset("runtime.g", "goid")) {
      GoidOffset out{static_cast<uint32_t>(*off), "DWARF"};
      if (fromCode.offset && *fromCode.offset != *off)
        out.how += " (runtime.newproc1 says " + std::to_string(*fromCode.offset) + ")";
      else if (fromCode.offset)
        out.how += ", and " + fromCode.how;
      return out;
    }
  return fromCode;
}

GoidOffsetInUse goidOffsetInUse(const GoBinary& bin) {
  GoidOffset found = findGoidOffset(bin);
  if (found.offset) return {*found.offset, found.how, false};
  return {152, "assumed: Go's usual offset; not found in the binary: " + found.how, true};
}

}  // namespace goscope
