// Turns user stacks from BPF (runtime pcs, innermost first) into Go frames
// with inlined calls expanded, from pclntab: works on stripped binaries.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "binary/pclntab.hpp"

namespace goscope {

struct StackFrame {
  uint64_t pc = 0;  // runtime pc
  SourceFrame source;
  bool known = false;  // false: outside the executable (vdso, C code): printed as an address
};

// The first pc is the probed instruction; the others are return addresses,
// looked up at pc-1 so a call at the end of an inlined range is attributed to
// the call, not to what follows it.
std::vector<StackFrame> symbolizeStack(const Pclntab& pcln, std::span<const uint64_t> pcs, uint64_t loadBias);

// "main.main;main.runRound;main.add": root first, as flame-graph tools read.
std::string foldedLine(const std::vector<StackFrame>& frames);
std::string frameText(const StackFrame& f);  // "main.add /src/main.go:24" or "0x7ffd..."

}  // namespace goscope
