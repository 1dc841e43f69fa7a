// Reading a package variable straight from a running process's memory
// (process_vm_readv), without stopping it: `goscope read`'s zero-pause path,
// for expressions that are plain package variables whose address and type
// DWARF gives. The result is a goscope value (value/value.hpp), laid out as
// Delve would load it with read's limits, so both paths print the same.
//
// What it leaves to Delve: maps, channels, interfaces and funcs (their
// memory layouts are runtime internals that change between Go releases;
// Delve tracks them), and anything that is not a plain variable name.
// What it cannot promise: atomicity. The target keeps running while the
// words are read, so a value written during the read may mix old and new
// words (a torn read); Delve's stop rules that out. A single aligned word of
// up to 8 bytes (an int, a pointer) is read whole.
#pragma once

#include <string>

#include "value/value.hpp"
#include "target/go_binary.hpp"
#include "target/process.hpp"
#include "util/result.hpp"

namespace goscope {

// The same limits goscope read asks Delve for: strings up to 256 bytes, the
// first 64 elements of slices and arrays, two levels of nested structs,
// pointers followed.
struct DirectReadLimits {
  size_t maxString = 256;
  size_t maxElems = 64;
  int maxDepth = 2;
};

// Why `name` cannot be read directly from `bin` (empty when it can).
std::string directReadRefusal(const GoBinary& bin, const std::string& name);

// Errors: NoMatch/BadTarget as findGlobal; TargetGone when the process
// exited; Permission when its memory cannot be read.
Result<Value> readGlobalDirect(const GoBinary& bin, const Process& proc, uint64_t loadBias,
                                       const std::string& name, const DirectReadLimits& limits = {});

}  // namespace goscope
