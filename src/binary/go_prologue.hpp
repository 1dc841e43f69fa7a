// Recognises the stack-split prologue the Go toolchain puts at the top of
// every function that may grow its stack (cmd/internal/obj/x86/obj6.go,
// stacksplit), and the frame setup after it. Pure: works on the first few
// decoded instructions of a function.
//
//   [g load, ABI0 only]  mov %fs:-8,%r14          | mov $-8,%r14; mov %fs:(%r14),%r14 (PIE)
//                        (Go < 1.17: into %rcx, and every function has it)
//   small frame          cmp 0x10(%g),%rsp                   (0x18: stackguard1, C-like funcs)
//   large frame          lea -N(%rsp),%tmp; cmp 0x10(%g),%tmp
//   huge frame           mov %rsp,%tmp; sub $N,%tmp; jb M; cmp 0x10(%g),%tmp
//   then                 jbe M       (76 rel8 or 0f 86 rel32; M calls runtime.morestack*)
//   frame (Go <= 1.20)   sub $N,%rsp (or add $-N); mov %rbp,N-8(%rsp); lea N-8(%rsp),%rbp
//   frame (Go >= 1.21)   push %rbp; mov %rsp,%rbp; [sub $N,%rsp]
//
// The morestack path returns to the entry, so a probe before the jbe fires
// twice when the stack grows; at the jbe itself CF|ZF says which pass it is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "binary/x86_insn.hpp"

namespace goscope {

// One decoded instruction: its address and its bytes (size == its length).
struct DecodedInsn {
  uint64_t address = 0;
  std::span<const uint8_t> bytes;
  uint64_t next() const { return address + bytes.size(); }
};

struct GoPrologue {
  enum class Form : uint8_t { None, Small, Large, Huge };
  Form form = Form::None;
  bool loadsGFromTls = false;
  std::optional<uint64_t> stackCheckBranch;  // the jbe
  std::optional<uint64_t> morestackTarget;   // where it jumps
  std::optional<int64_t> frameSize;          // how far the frame setup moves %rsp down
  uint64_t bodyStart = 0;                    // first address past everything recognised
  // form, stackCheckBranch and morestackTarget are what every longer head
  // (of the same function) would give: an entry probe's decision can stop
  // decoding here (DecodeDepth::EntryOnly). frameSize and bodyStart may
  // still grow with more instructions.
  bool stackCheckDecided = false;
};

// How many leading instructions recognisePrologue may look at.
inline constexpr size_t kPrologueWindow = 10;

// `head` is the function's first instructions (at most kPrologueWindow are
// used); `entry` is head[0].address, or the function entry when head is empty.
GoPrologue recognisePrologue(std::span<const DecodedInsn> head, uint64_t entry);
// The same from the head's instructions already parsed (views[k] is
// x86::parseInsn(head[k].bytes)), and without the frame setup when `frame`
// is false (frameSize unset, bodyStart past the stack check): what an
// entry-only decode asks after each instruction (disasm.cpp) without parsing
// its head again each time.
GoPrologue recognisePrologue(std::span<const DecodedInsn> head, std::span<const std::optional<x86::InsnView>> views,
                             uint64_t entry, bool frame);

}  // namespace goscope
