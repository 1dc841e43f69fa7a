// Where a function's argument words are at its entry, from its own code: the
// traceback layout (arg_info.hpp) gives each word's offset in the argument
// frame, which for a register argument is its spill slot, not its register.
//
// Exact when the function grows its stack: the compiler saves every register
// argument to its spill slot before calling runtime.morestack, with one store
// per register (cmd/compile/internal/ssagen/ssa.go, RegArgs: "all the
// parameters (used, partially used, and unused)"), so those stores map each
// offset to its register. A word at an offset below every spill slot is
// passed on the stack. A function that never grows its stack (a small leaf)
// has no such stores: its words are taken to be in integer registers in
// order only when it has at most 9 words, its code touches no float argument
// register (X0-X14), and the only memory of its argument frame it touches is
// a word's slot, stored from that word's register (the register allocator
// spilling an argument to its own slot) and loaded back; otherwise the
// places are unknown and the words print as such. docs/go-runtime.md, "The
// traceback's argument layout", gives the sources and what the rule cannot
// see (a float, or an array of more than one element, that a leaf never touches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "binary/arg_info.hpp"

namespace goscope {

class GoBinary;
struct GoFunction;

struct ArgSpill {
  uint32_t offset = 0;  // in the argument frame, as ArgInfoItem::offset
  uint8_t size = 0;     // bytes the store writes
  bool isFloat = false;
  unsigned reg = 0;     // integer: Go's order, 0 = RAX .. 8 = R11; float: N of XN
};

struct ArgPlaces {
  enum class From : uint8_t {
    Spills,        // the stack-growth path's stores: `spills`
    IntegerOrder,  // no stack growth, no float register, no frame memory: RAX, RBX, ... in order
    Unknown,       // `why`
  };
  From from = From::Unknown;
  std::vector<ArgSpill> spills;
  std::string why;
};

// `args`: the function's traceback layout (arg_info.hpp).
ArgPlaces argPlaces(const GoBinary& bin, const GoFunction& fn, const std::vector<ArgInfoItem>& args);

}  // namespace goscope
