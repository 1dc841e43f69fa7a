// What the Linux 6.18 x86-64 uprobe code does with a probe on one instruction
// (arch/x86/kernel/uprobes.c: uprobe_init_insn, branch_setup_xol_ops,
// push_setup_xol_ops), plus the hazards measured on this kernel. A pure
// function of the instruction's encoding, so it is unit-tested exhaustively.
//
// Measured on 6.18.44 with perf-event uprobes on hand-written instructions:
// under a probe, VEX vpor / vpcmpeqb / vmovdqu-store and `49 90` ran as NOPs
// (1000 of 1000 results wrong); VEX vmovdqu-load and `lock add` were refused
// with ENOTSUPP (524); `pushfq` and the `syscall` of runtime.clone killed the
// target with SIGTRAP; ud2, pause, nopl, jbe and syscall(getpid) behaved.
// Refused-or-not was also checked for one instruction of every encoding class
// in a Go fixture (1,603 classes) and the Go compiler (2,114): all agreed, and
// tests/runtime/test_disasm.cpp re-checks a sample on the running kernel.
#pragma once

#include <cstdint>
#include <string_view>

#include "binary/x86_insn.hpp"

namespace goscope {

// How the kernel runs the probed instruction after the breakpoint hit.
enum class UprobeExec : uint8_t {
  Emulated,  // the kernel does it itself (nop, push reg, jmp/jcc/call rel): ~0.35 us/hit
  Stepped,   // copied out of line and single-stepped: ~4 us/hit
  Refused,   // the kernel refuses the probe (ENOTSUPP/ENOEXEC); one such offset
             // fails a whole uprobe_multi link
};

// Why an instruction must never be probed. Hazard::None means it is safe.
enum class Hazard : uint8_t {
  None,
  Int3,             // cc / cd 03: refused (ENOTSUPP)
  RefusedOpcode,    // first opcode byte in the kernel's bad table (VEX 6f/ef, in/out, hlt, int N)
  RefusedPrefix,    // lock, or an es/cs/ss/ds segment prefix
  Refused66Branch,  // jmp/jcc/call with a 0x66 prefix
  RefusedMovSs,     // mov to %ss (masks exceptions)
  XchgRunAsNop,     // REX.B + 90 (e.g. `49 90` xchg %rax,%r8): 6.18 emulates it as a NOP
  VexRunAsBranch,   // VEX/EVEX opcode 70-7f/90/e8/e9/eb: 6.18 emulates it as jcc/nop/call/jmp
  PushfLeaksTrapFlag,  // single-stepped pushf saves TF; the later popf raises SIGTRAP
  SyscallStepped,   // single-stepped syscall: a clone child inherits TF and dies of SIGTRAP
  XopEncoding,      // the kernel's decoder has no XOP support
  Undecodable,      // the decoder (Zydis) rejects the bytes here
};

struct UprobeVerdict {
  UprobeExec exec = UprobeExec::Stepped;
  Hazard hazard = Hazard::None;
  bool safe() const { return hazard == Hazard::None; }
};

UprobeVerdict classifyForUprobe(const x86::InsnView& insn);

// One line: what goes wrong when this is probed.
std::string_view describe(Hazard h);

}  // namespace goscope
