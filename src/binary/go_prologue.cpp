#include "binary/go_prologue.hpp"

#include <algorithm>

#include "binary/x86_insn.hpp"

namespace goscope {

namespace {

using x86::InsnView;
using x86::ModRM;
using x86::OpMap;

// A 64-bit (REX.W) legacy instruction with this primary opcode, and its ModRM.
std::optional<ModRM> rexW(const InsnView& v, uint8_t opcode) {
  if (!v.isLegacy(OpMap::Primary, opcode) || !v.rexW()) return std::nullopt;
  return v.modrm();
}

// The sign-extended immediate of `size` bytes right after the ModRM.
std::optional<int64_t> immAfter(const InsnView& v, const ModRM& m, size_t size) {
  auto rest = v.afterOpcode();
  if (rest.size() < m.length + size) return std::nullopt;
  if (size == 1) return static_cast<int8_t>(rest[m.length]);
  uint32_t x = 0;
  for (size_t k = 0; k < 4; ++k) x |= static_cast<uint32_t>(rest[m.length + k]) << (8 * k);
  return static_cast<int32_t>(x);
}

// `op $imm, %reg` in group 1 (81 /digit imm32, 83 /digit imm8).
std::optional<int64_t> group1Imm(const InsnView& v, uint8_t digit, uint8_t reg) {
  for (auto [opcode, size] : {std::pair<uint8_t, size_t>{0x83, 1}, {0x81, 4}}) {
    if (auto m = rexW(v, opcode); m && m->isRegister() && (m->reg & 7) == digit && m->rm == reg)
      return immAfter(v, *m, size);
  }
  return std::nullopt;
}

// A conditional jump with this condition code (2 = jb, 6 = jbe): its target.
std::optional<uint64_t> jcc(const DecodedInsn& in, const InsnView& v, uint8_t cc) {
  if (v.prefixes != 0 || v.rex != 0 || v.encoding != x86::Encoding::Legacy) return std::nullopt;
  auto rest = v.afterOpcode();
  if (v.map == OpMap::Primary && v.opcode == 0x70 + cc && rest.size() == 1)
    return in.next() + static_cast<int8_t>(rest[0]);
  if (v.map == OpMap::Map0F && v.opcode == 0x80 + cc && rest.size() == 4) {
    uint32_t x = 0;
    for (size_t k = 0; k < 4; ++k) x |= static_cast<uint32_t>(rest[k]) << (8 * k);
    return in.next() + static_cast<int64_t>(static_cast<int32_t>(x));
  }
  return std::nullopt;
}

// `mov %fs:-8,%g` (non-PIE TLS, Local Exec): the g register.
std::optional<uint8_t> movFsAbsToReg(const InsnView& v) {
  auto m = rexW(v, 0x8b);
  if (!m || !v.has(x86::kSegFs) || m->isRegister() || m->base || m->index || m->ripRelative)
    return std::nullopt;
  return m->reg;
}

// `mov $imm,%r` or `mov off(%rip),%r`, the first half of a PIE g load: r.
std::optional<uint8_t> tlsOffsetLoad(const InsnView& first) {
  if (auto m = rexW(first, 0xc7); m && m->isRegister() && (m->reg & 7) == 0) return m->rm;
  if (auto m = rexW(first, 0x8b); m && m->ripRelative) return m->reg;
  return std::nullopt;
}

// Its second half, `mov %fs:(%r),%r` (PIE): true when `second` is it.
bool movFsIndirect(uint8_t r, const InsnView& second) {
  auto m2 = rexW(second, 0x8b);
  return m2 && second.has(x86::kSegFs) && m2->isBaseDisp(r, 0) && m2->reg == r;
}

// `cmp 0x10(%g),%reg` (0x18: stackguard1): the register compared.
std::optional<uint8_t> cmpStackGuard(const InsnView& v, uint8_t g) {
  auto m = rexW(v, 0x3b);
  if (!m || !(m->isBaseDisp(g, 0x10) || m->isBaseDisp(g, 0x18))) return std::nullopt;
  return m->reg;
}

// `lea disp(%rsp),%tmp`: tmp.
std::optional<uint8_t> leaFromRsp(const InsnView& v) {
  auto m = rexW(v, 0x8d);
  if (!m || m->isRegister() || m->base != x86::RSP || m->index) return std::nullopt;
  return m->reg;
}

// `mov %rsp,%tmp` (89 or 8b form): tmp.
std::optional<uint8_t> movFromRsp(const InsnView& v) {
  if (auto m = rexW(v, 0x89); m && m->isRegister() && m->reg == x86::RSP) return m->rm;
  if (auto m = rexW(v, 0x8b); m && m->isRegister() && m->rm == x86::RSP) return m->reg;
  return std::nullopt;
}

bool movRegToReg(const InsnView& v, uint8_t from, uint8_t to) {
  if (auto m = rexW(v, 0x89); m && m->isRegister() && m->reg == from && m->rm == to) return true;
  if (auto m = rexW(v, 0x8b); m && m->isRegister() && m->reg == to && m->rm == from) return true;
  return false;
}

// Frame size allocated by `sub $N,%rsp` / `add $-N,%rsp`.
std::optional<int64_t> allocatesFrame(const InsnView& v) {
  if (auto n = group1Imm(v, 5, x86::RSP); n && *n > 0) return *n;
  if (auto n = group1Imm(v, 0, x86::RSP); n && *n < 0) return -*n;
  return std::nullopt;
}

// `mov %rbp,d(%rsp)` / `lea d(%rsp),%rbp`.
bool savesRbp(const InsnView& v) {
  auto m = rexW(v, 0x89);
  return m && !m->isRegister() && m->base == x86::RSP && !m->index && m->reg == x86::RBP;
}
bool setsRbpFromRsp(const InsnView& v) { return leaFromRsp(v) == x86::RBP; }

}  // namespace

GoPrologue recognisePrologue(std::span<const DecodedInsn> head, uint64_t entry) {
  if (head.size() > kPrologueWindow) head = head.first(kPrologueWindow);
  std::optional<InsnView> v[kPrologueWindow];
  for (size_t k = 0; k < head.size(); ++k) v[k] = x86::parseInsn(head[k].bytes);
  return recognisePrologue(head, std::span(v, head.size()), entry, true);
}

GoPrologue recognisePrologue(std::span<const DecodedInsn> head, std::span<const std::optional<InsnView>> v,
                             uint64_t entry, bool frame) {
  GoPrologue p;
  p.bodyStart = entry;
  const size_t n = std::min({head.size(), v.size(), kPrologueWindow});
  // Set when the stack check's match asked for an instruction past the head:
  // a longer head could then find a stack check that this one does not.
  bool ranOut = false;
  auto at = [&](size_t k) -> const InsnView* {
    if (k >= n) ranOut = true;
    return k < n && v[k] ? &*v[k] : nullptr;
  };

  size_t i = 0;
  // The g register: R14 in ABIInternal, loaded from TLS in ABI0 (and before Go 1.17).
  uint8_t g = x86::R14;
  if (auto* a = at(0)) {
    if (auto r = movFsAbsToReg(*a)) {
      g = *r, i = 1, p.loadsGFromTls = true;
    } else if (auto r1 = tlsOffsetLoad(*a)) {
      if (auto* b = at(1); b && movFsIndirect(*r1, *b)) g = *r1, i = 2, p.loadsGFromTls = true;
    }
  }

  // The comparison against the stack guard, in one of its three shapes.
  // Each asks for the next instruction only while the ones before match, so
  // that a head cut short asks for no more than it needs (stackCheckDecided).
  size_t k = i;
  if (auto* a = at(k); a && cmpStackGuard(*a, g) == x86::RSP) {
    p.form = GoPrologue::Form::Small, k += 1;
  } else if (auto t = a ? leaFromRsp(*a) : std::nullopt; t && at(k + 1) &&
             cmpStackGuard(*at(k + 1), g) == *t) {
    p.form = GoPrologue::Form::Large, k += 2;
  } else if (auto t2 = a ? movFromRsp(*a) : std::nullopt;
             t2 && at(k + 1) && group1Imm(*at(k + 1), 5, *t2) && at(k + 2) &&
             jcc(head[k + 2], *at(k + 2), 2) && at(k + 3) && cmpStackGuard(*at(k + 3), g) == *t2) {
    p.form = GoPrologue::Form::Huge, k += 4;
  }
  if (p.form != GoPrologue::Form::None) {
    auto target = at(k) ? jcc(head[k], *at(k), 6) : std::nullopt;
    if (target) {
      p.stackCheckBranch = head[k].address;
      p.morestackTarget = target;
      i = k + 1;
    } else {
      p.form = GoPrologue::Form::None;  // a compare without its jbe is not a prologue
      p.loadsGFromTls = false;
      i = 0;
    }
  } else {
    p.loadsGFromTls = false;  // a g load alone (ABI wrappers) is not a prologue
    i = 0;
  }
  // A jbe found is final: every shape tried before it looked only at
  // instructions before it. No jbe is final when no shape ran out of head.
  p.stackCheckDecided = p.stackCheckBranch.has_value() || !ranOut;

  // Frame setup: Go <= 1.20 `sub; mov %rbp,..; lea ..,%rbp`, Go >= 1.21 `push; mov; [sub]`.
  if (auto* a = frame ? at(i) : nullptr) {
    if (auto size = allocatesFrame(*a)) {
      p.frameSize = size, i += 1;
      if (at(i) && savesRbp(*at(i)) && at(i + 1) && setsRbpFromRsp(*at(i + 1))) i += 2;
    } else if (a->isLegacy(x86::OpMap::Primary, 0x55) && a->length() == 1 && at(i + 1) &&
               movRegToReg(*at(i + 1), x86::RSP, x86::RBP)) {
      i += 2;
      p.frameSize = 8;
      if (at(i)) {
        if (auto size = allocatesFrame(*at(i))) p.frameSize = *size + 8, i += 1;
      }
    }
  }
  if (i > 0) p.bodyStart = head[i - 1].next();
  return p;
}

}  // namespace goscope
