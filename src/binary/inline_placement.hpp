// The placement rule for one inlined body (docs/go-runtime.md, "Inlined
// calls"): the caller's code as a control-flow graph (every instruction,
// fall-through and direct branches), and the instruction every call of the
// body passes exactly once, or why there is none. Pure: bytes in, addresses
// out (unit-tested on hand-assembled callers, fuzzed with the disassembler).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "binary/disasm.hpp"
#include "binary/interned_string.hpp"
#include "binary/pclntab.hpp"

namespace goscope {

// The three strings are interned (interned_string.hpp): they repeat
// thousands of times in a big binary, and a body is then a few pointers.
struct InlinedSite {
  InternedString callee;              // the inlined function, e.g. "main.square"
  const GoFunction* caller = nullptr; // the physical function its body is in
  InternedString callFile;            // source position of the call
  int callLine = 0;
  // Where to probe (link-time addresses): usually one, the body's first
  // instruction; several when the compiler entered the body from several
  // places (each from outside it). Empty: left out, see reason.
  std::vector<uint64_t> probes;
  InternedString reason;  // why these instructions, or why none
  // The caller has not moved SP there (a leaf without a frame): RBP is still
  // its caller's, so a stack walk needs [RSP], the return address, as at an
  // entry (pclntab's pcsp table says).
  bool callerFrameless = false;
  // Which of the caller's inlined calls (Pclntab::inlinedCalls order): with
  // the caller, the order every search gives (the analysis cache keeps it).
  uint32_t callIndex = 0;
};

// One caller decoded once, for all of its inlined bodies. `code` must
// outlive it (it is read, not copied).
class InlinePlacer {
 public:
  InlinePlacer(const FunctionCode& code, std::span<const uint8_t> bytes);
  ~InlinePlacer();
  InlinePlacer(InlinePlacer&&) = delete;
  // body: the pc ranges of the inlined call and of the calls inlined into
  // it; parentPc: the inline tree's "instruction at the call site". Fills
  // site.probes or site.reason.
  void place(const std::vector<std::pair<uint64_t, uint64_t>>& body, uint64_t parentPc, InlinedSite& site) const;

 private:
  struct Graph;
  const FunctionCode& code_;
  std::unique_ptr<Graph> graph_;
};

// The pure placement rule, on a decoded caller and one inlined call's body
// (its pc ranges and those of the calls inlined into it): fills probes or
// reason. parentPc is the inline tree's "instruction at the call site".
void placeInlinedProbe(const FunctionCode& code, std::span<const uint8_t> bytes,
                       const std::vector<std::pair<uint64_t, uint64_t>>& body, uint64_t parentPc, InlinedSite& site);

// The pc ranges of each call's body: its own and those of every call
// inlined into it (each call's ranges go to itself and up its parent chain),
// sorted; bodiesOf(calls)[i] is calls[i]'s.
std::vector<std::vector<std::pair<uint64_t, uint64_t>>> bodiesOf(const std::vector<InlinedCall>& calls);

// What the rule reads of one instruction (its bytes, delimited by the
// decoder): whether it only falls through to the next one (no branch, no
// return, no indirect jump), and whether it is a nop (what an inline mark
// assembles to). For the proof of a cached placement (cached_probe_proof.hpp).
struct InstructionFlow {
  bool straightLine = false;
  bool isNop = false;
};
InstructionFlow instructionFlow(uint64_t addr, std::span<const uint8_t> bytes);

}  // namespace goscope
