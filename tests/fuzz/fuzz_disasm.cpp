// Fuzz target: the disassembly every probe address comes from. Zydis decodes
// the bytes, x86_insn re-reads each instruction as the kernel's decoder does,
// uprobe_rules classifies it and go_prologue matches the stack check. Input:
// a function's bytes (the target binary's .text is untrusted input).
// Checked: the boundaries, RETs, unsafe addresses and the chosen probe are
// consistent with each other, whatever the bytes; the inlined-body placement
// (inline_placement.hpp) on a body made of the input's middle third only ever
// chooses a safe instruction boundary inside that body.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "binary/disasm.hpp"
#include "binary/inline_placement.hpp"
#include "binary/x86_insn.hpp"

using namespace goscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint64_t kEntry = 0x401000;
  auto r = analyzeFunction(std::span<const uint8_t>(data, size), kEntry);
  if (!r) return 0;  // empty input: a Usage error
  const FunctionCode& fn = *r;
  if (fn.end != kEntry + size || fn.bodyEnd > fn.end || fn.bodyEnd < fn.entry) __builtin_trap();
  size_t starts = 0;
  for (uint64_t a = fn.entry; a < fn.bodyEnd; ++a) {
    if (!isInstructionBoundary(fn, a)) continue;
    ++starts;
    uint64_t next = a + 1;
    while (next < fn.bodyEnd && !isInstructionBoundary(fn, next)) ++next;
    if (next - a > 15) __builtin_trap();  // no x86 instruction is longer
    (void)x86::parseInsn(std::span<const uint8_t>(data + (a - fn.entry), next - a));
    (void)hazardAt(fn, a);
  }
  if (starts != fn.instructionCount) __builtin_trap();
  for (uint64_t ret : fn.returns)
    if (!isInstructionBoundary(fn, ret)) __builtin_trap();
  if (!std::is_sorted(fn.returns.begin(), fn.returns.end()) || !std::is_sorted(fn.unsafe.begin(), fn.unsafe.end()))
    __builtin_trap();
  if (fn.unsafe.size() != fn.unsafeWhy.size()) __builtin_trap();
  if (fn.probe.kind != ProbeSite::Kind::None && !isSafeToProbe(fn, fn.probe.address)) __builtin_trap();
  if (fn.undecodable.has_value() != returnsUnknownReason(fn).has_value()) __builtin_trap();
  if (fn.undecodable && (*fn.undecodable != fn.bodyEnd || fn.undecodableWhy.empty())) __builtin_trap();
  const std::vector<std::pair<uint64_t, uint64_t>> body = {{kEntry + size / 3, kEntry + 2 * size / 3}};
  InlinedSite site;
  placeInlinedProbe(fn, std::span<const uint8_t>(data, size), body, kEntry + size / 2, site);
  for (uint64_t p : site.probes)
    if (!isSafeToProbe(fn, p) || ((p < body[0].first || p >= body[0].second) && p != kEntry + size / 2)) __builtin_trap();
  if (site.probes.empty() == site.reason.starts_with("the ")) __builtin_trap();  // a reason either way
  return 0;
}
