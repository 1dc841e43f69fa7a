#include "binary/uprobe_rules.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace goscope {

namespace {

using x86::Encoding;
using x86::InsnView;
using x86::OpMap;

// good_insns_64 of arch/x86/kernel/uprobes.c, as the list of its zero bits.
// The kernel tests it against OPCODE1: the first opcode byte, which is 0x0f
// (marked good) for every legacy two-/three-byte opcode, so its
// good_2byte_insns table is never consulted (ud2 and syscall are accepted on
// 6.18); after a VEX/EVEX escape OPCODE1 is the opcode byte itself, so e.g.
// VEX 6f (vmovdqu load) and ef (vpxor) are refused.
constexpr std::array<uint8_t, 40> kBadOpcode1 = {
    0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60, 0x61, 0x62,
    0x6c, 0x6d, 0x6e, 0x6f, 0x82, 0x9a, 0xcc, 0xcd, 0xce, 0xcf, 0xd4, 0xd5, 0xd6, 0xe4,
    0xe5, 0xe6, 0xe7, 0xea, 0xec, 0xed, 0xee, 0xef, 0xf1, 0xf4, 0xfa, 0xfb};

// As a table indexed by the byte: every instruction of every function is
// classified at start-up, and a search of the 40 was 7% of the prologue
// decode of `count -b buf '*'`.
constexpr std::array<bool, 256> kBadOpcode1Table = [] {
  std::array<bool, 256> t{};
  for (uint8_t op : kBadOpcode1) t[op] = true;
  return t;
}();

bool badOpcode1(uint8_t op) { return kBadOpcode1Table[op]; }

// The kernel's x86_nops[1..8] (P6 NOPs): 6.18 emulates an exact match (added
// in 2025 with the optimized uprobes, which also turn a probed 5-byte NOP into
// a call to a trampoline: ~0.18 us/hit; Go code never starts with one).
bool isKernelNop(std::span<const uint8_t> b) {
  static const uint8_t nops[9][8] = {
      {},
      {0x90},
      {0x66, 0x90},
      {0x0f, 0x1f, 0x00},
      {0x0f, 0x1f, 0x40, 0x00},
      {0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
      {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}};
  // Every one starts 90, 66 or 0f: most instructions are told apart by their
  // first byte, without a call to memcmp (every instruction of every function
  // is classified at start-up: 2.7% of a cold `count -b buf '*'`).
  if (b.size() > 8) return false;
  if (!b.empty() && b[0] != 0x90 && b[0] != 0x66 && b[0] != 0x0f) return false;
  return std::memcmp(b.data(), nops[b.size()], b.size()) == 0;
}

bool isCondJumpOpcode(uint8_t op) { return op >= 0x70 && op <= 0x7f; }

// branch_setup_xol_ops switches on OPCODE1 without looking at the encoding.
bool branchSetupMatches(const InsnView& in) {
  const uint8_t op1 = in.kernelOpcode1();
  if (op1 == 0xeb || op1 == 0xe9 || op1 == 0xe8 || op1 == 0x90) return true;
  if (in.encoding == Encoding::Legacy && in.map == OpMap::Map0F)
    return in.opcode >= 0x80 && in.opcode <= 0x8f;  // jcc rel32
  return isCondJumpOpcode(op1);
}

}  // namespace

UprobeVerdict classifyForUprobe(const InsnView& in) {
  const auto refused = [](Hazard h) { return UprobeVerdict{UprobeExec::Refused, h}; };

  // uprobe_init_insn: decode, is_prefix_bad, insn_masking_exception, good_insns_64.
  if (in.encoding == Encoding::Xop) return refused(Hazard::XopEncoding);
  if (in.prefixes & (x86::kLock | x86::kSegEs | x86::kSegCs | x86::kSegSs | x86::kSegDs))
    return refused(Hazard::RefusedPrefix);
  if (in.isLegacy(OpMap::Primary, 0x8e)) {
    if (auto m = in.modrm(); m && (m->reg & 7) == 2) return refused(Hazard::RefusedMovSs);
  }
  const uint8_t op1 = in.kernelOpcode1();
  if (badOpcode1(op1)) {
    const bool int3 = in.encoding == Encoding::Legacy &&
                      (op1 == 0xcc || (op1 == 0xcd && in.length() >= 2 && in.afterOpcode()[0] == 3));
    return refused(int3 ? Hazard::Int3 : Hazard::RefusedOpcode);
  }

  // branch_setup_xol_ops: nops, jmp/call rel, jcc are emulated.
  if (in.encoding == Encoding::Legacy && isKernelNop(in.bytes))
    return {UprobeExec::Emulated, Hazard::None};
  if (branchSetupMatches(in)) {
    // 6.18 still switches on the raw byte: a VEX/EVEX opcode that equals a
    // branch or 0x90 is "emulated" as that branch (vpor ran as jmp +0).
    if (in.encoding != Encoding::Legacy) return {UprobeExec::Emulated, Hazard::VexRunAsBranch};
    // `case 0x90: goto setup` emulates any prefix + 90 as a NOP, also REX.B 90,
    // which is xchg %rax,%r8..r15 (fixed only in 6.19's insn_is_nop()).
    if (op1 == 0x90) {
      return {UprobeExec::Emulated, in.rexB() ? Hazard::XchgRunAsNop : Hazard::None};
    }
    if (in.has(x86::kOpSize)) return refused(Hazard::Refused66Branch);
    return {UprobeExec::Emulated, Hazard::None};
  }

  // push_setup_xol_ops: push %reg (1 byte) or push %r8..r15 (41 5x) is emulated.
  if (in.encoding == Encoding::Legacy && in.map == OpMap::Primary && in.opcode >= 0x50 &&
      in.opcode <= 0x57 && (in.length() == 1 || (in.length() == 2 && in.rex == 0x41)))
    return {UprobeExec::Emulated, Hazard::None};

  // Everything else is single-stepped out of line; two of those break the target.
  if (in.isLegacy(OpMap::Primary, 0x9c)) return {UprobeExec::Stepped, Hazard::PushfLeaksTrapFlag};
  if (in.isLegacy(OpMap::Map0F, 0x05) || in.isLegacy(OpMap::Map0F, 0x34))
    return {UprobeExec::Stepped, Hazard::SyscallStepped};
  return {UprobeExec::Stepped, Hazard::None};
}

std::string_view describe(Hazard h) {
  switch (h) {
    case Hazard::None: return "safe to probe";
    case Hazard::Int3: return "int3: the kernel refuses a uprobe here (ENOTSUPP)";
    case Hazard::RefusedOpcode:
      return "opcode in the kernel's bad-instruction table: the uprobe is refused (ENOTSUPP)";
    case Hazard::RefusedPrefix:
      return "lock or es/cs/ss/ds prefix: the uprobe is refused (ENOTSUPP)";
    case Hazard::Refused66Branch: return "branch with a 0x66 prefix: the uprobe is refused (ENOTSUPP)";
    case Hazard::RefusedMovSs: return "mov to %ss: the uprobe is refused (ENOTSUPP)";
    case Hazard::XchgRunAsNop:
      return "REX.B xchg with %rax (e.g. 49 90): kernel 6.18 runs it as a NOP, corrupting the target";
    case Hazard::VexRunAsBranch:
      return "VEX/EVEX opcode 70-7f/90/e8/e9/eb: kernel 6.18 emulates it as a branch or NOP, "
             "corrupting the target";
    case Hazard::PushfLeaksTrapFlag:
      return "pushf single-stepped saves the trap flag; the next popf kills the target with SIGTRAP";
    case Hazard::SyscallStepped:
      return "syscall single-stepped: a clone()d thread inherits the trap flag and dies of SIGTRAP";
    case Hazard::XopEncoding: return "XOP encoding: the kernel cannot decode it";
    case Hazard::Undecodable: return "bytes that do not decode as an instruction";
  }
  return "unknown hazard";
}

}  // namespace goscope
