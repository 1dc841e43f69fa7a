// Disassembly of one Go function for probing: instruction boundaries, every
// RET, the stack-check prologue, the instructions a uprobe must never touch,
// and the cheapest safe place for an entry probe.
//
// A linear sweep from the entry is exact for Go: the toolchain puts no data
// in .text, and pads between functions with int3 (cc), which is not part of
// the body. Decoding is Zydis's (docs/disassembly.md); what the kernel does
// with each instruction is uprobe_rules.hpp; the prologue is go_prologue.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "binary/go_prologue.hpp"
#include "binary/uprobe_rules.hpp"
#include "util/result.hpp"

struct ZydisDecodedInstruction_;

namespace goscope {

struct ProbeSite {
  enum class Kind : uint8_t {
    // The prologue's jbe, emulated by the kernel (~0.35 us/hit). It runs twice
    // when the stack grows: the BPF side must ignore the pass with CF|ZF set
    // (going to morestack); the other pass happens exactly once per call.
    StackCheckBranch,
    EmulatedEntry,  // the entry instruction is emulated (push, nop, jmp, jcc, call)
    SteppedEntry,   // the entry instruction is single-stepped (~4 us/hit)
    // A stepped entry replaced by the `call rel32`s that call it (emulated,
    // ~0.35 us/hit), where every call provably goes through them
    // (call_sites.hpp decides it; analyzeFunction never chooses it).
    CallSites,
    None,           // the entry cannot be probed safely: see reason
  };
  uint64_t address = 0;
  Kind kind = Kind::None;
  std::string reason;  // why this site (or why none)
  // CallSites: every direct call of the function, ascending (`address` is the first).
  std::vector<uint64_t> callSites;
  // SteppedEntry: why its call sites are not used instead ("" when not asked).
  std::string callSitesRefused;
};

// How far to decode. The entry probe (count) depends on the stack check and
// the entry only: chooseProbeSite looks at the entry and the stack-check jbe,
// and the prologue matcher says when a head is long enough to know the jbe
// (GoPrologue::stackCheckDecided: one instruction for most functions without
// a stack check, two to seven with one: up to five for the check, two for a
// TLS g load; never more than kPrologueWindow). RETs (latency,
// trace, list) need the sweep to the function's end. Decoding only the head
// is what makes `count -b BIN '*'` start fast on 60,000-function binaries
// (docs/disassembly.md, "Start-up"); the probe chosen is the same
// (tests/runtime/test_disasm.cpp checks it on every function of real binaries).
enum class DecodeDepth : uint8_t {
  EntryOnly,  // up to the stack check's decision: `probe` only, no RETs, no frame setup
  Whole,      // to the end of the body
};

struct FunctionCode {
  DecodeDepth depth = DecodeDepth::Whole;
  uint64_t entry = 0;
  uint64_t end = 0;      // entry + the bytes given (includes trailing padding)
  // First byte of trailing int3 padding, or where decoding stopped (bad
  // bytes; with EntryOnly, also the end of the head). Boundaries, `unsafe`
  // and RETs are known in [entry, bodyEnd) only: an address past it is never
  // probed (hazardAt says Undecodable).
  uint64_t bodyEnd = 0;
  std::vector<uint64_t> returns;              // every RET (c3/c2), ascending; empty with EntryOnly
  std::optional<uint64_t> stackCheckBranch;   // the jbe of the stack-check prologue
  std::optional<uint64_t> morestackTarget;    // where that jbe goes
  GoPrologue::Form prologue = GoPrologue::Form::None;
  // First address past the stack check and recognised frame setup (with
  // EntryOnly, the frame setup is not decoded: past the stack check only).
  uint64_t bodyStart = 0;
  size_t instructionCount = 0;                // in the body
  std::vector<uint64_t> unsafe;               // addresses never to probe, ascending
  std::vector<Hazard> unsafeWhy;              // parallel to `unsafe`
  std::optional<uint64_t> undecodable;        // where the sweep stopped on bad bytes
  std::string_view undecodableWhy;            // the decoder's reason, in words (static text)
  ProbeSite probe;                            // the entry probe to use

  // One bit per byte of [entry, bodyEnd): set where an instruction starts.
  // ~1 bit per code byte, a quarter of a vector<uint32_t> of offsets.
  std::vector<uint64_t> boundaryBits;
};

// Called with every instruction the sweep decodes: its address, its bytes
// and Zydis's decoding (Zydis/Zydis.h). Another search that reads every
// instruction (the call sites', call_sites.hpp) rides along on the same
// decode instead of decoding the function again (start-up).
using InstructionHook =
    std::function<void(uint64_t at, std::span<const uint8_t> bytes, const ZydisDecodedInstruction_& in)>;

// Errors: Usage (empty code, address overflow). Bytes that do not decode are
// not an error: the sweep stops there and FunctionCode::undecodable says where.
Result<FunctionCode> analyzeFunction(std::span<const uint8_t> code, uint64_t entry,
                                     DecodeDepth depth = DecodeDepth::Whole, const InstructionHook* hook = nullptr);

// Why the RETs of this function are not known (nullopt: `returns` is
// complete). The sweep stopped on bytes the decoder rejects before the end of
// the function, so a RET after them would be missed: a latency or trace that
// probed `returns` would see calls that never complete. One line, for `list`
// (returns_reason) and the refusal of latency/trace. An EntryOnly analysis
// never looked for RETs, and says so.
std::optional<std::string> returnsUnknownReason(const FunctionCode& fn);

bool isInstructionBoundary(const FunctionCode& fn, uint64_t addr);
// Hazard::None when addr is a boundary and not in `unsafe`; Undecodable when it
// is not an instruction boundary of the body at all.
Hazard hazardAt(const FunctionCode& fn, uint64_t addr);
inline bool isSafeToProbe(const FunctionCode& fn, uint64_t addr) {
  return hazardAt(fn, addr) == Hazard::None;
}

// The entry-probe decision, pure: the prologue found, and what the kernel does
// with the first instruction (nullopt if there is none: empty or undecodable).
ProbeSite chooseProbeSite(uint64_t entry, const GoPrologue& prologue,
                          std::optional<UprobeVerdict> entryVerdict,
                          std::optional<UprobeVerdict> branchVerdict);

std::string_view kindName(ProbeSite::Kind k);

}  // namespace goscope
