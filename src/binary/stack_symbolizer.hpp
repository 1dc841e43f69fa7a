// Turns user stacks from BPF (runtime pcs, innermost first) into Go frames
// with inlined calls expanded, from pclntab: works on stripped binaries.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
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

// foldedLine(symbolizeStack(pcln, pcs, loadBias)), the same text, with the
// names at each pc looked up once: a program's stacks share most of their
// frames, and a session names them again at every -i report (a type
// checker's 120,000 stacks of ~80 frames took seconds a reading).
class FoldedNamer {
 public:
  FoldedNamer(const Pclntab& pcln, uint64_t loadBias) : pcln_(pcln), bias_(loadBias) {}
  std::string line(std::span<const uint64_t> pcs);

 private:
  // The names at one pc, root first and ';'-joined (its inlined calls
  // expanded); `first`: the probed instruction, looked up at pc itself.
  const std::string& namesAt(uint64_t pc, bool first);
  const Pclntab& pcln_;
  uint64_t bias_;
  std::unordered_map<uint64_t, std::string> names_[2];  // [first]
};

}  // namespace goscope
