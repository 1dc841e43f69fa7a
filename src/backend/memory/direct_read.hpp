// Reading a package variable straight from a running process's memory
// (process_vm_readv), without stopping it: `goscope read`'s zero-pause path,
// for expressions that are plain package variables whose address and type
// DWARF gives. The result is a goscope value (value/value.hpp) loaded by
// Delve's own rules (docs/delve.md "What a read loads"): the same depth
// counting, element and string limits, map iteration order and interface
// resolution, so both paths print the same.
//
// Every kind is read: numbers, strings, structs, arrays, slices, pointers,
// maps in both runtime layouts (bucket `hmap` up to Go 1.23, Swiss tables
// from 1.24), interfaces (the dynamic type from the itab or type word, laid
// out from DWARF), channels (len, cap) and funcs (the name from pclntab).
// The runtime structures are laid out from the binary's DWARF (the linker's
// hash<K,V>, map<K,V>, table<K,V>, hchan<T>, itab), never from offsets
// written here; a layout whose fields are not the ones this reader knows is
// refused (docs/go-runtime.md "Maps, interfaces, channels, funcs").
//
// Atomicity: the target keeps running while the words are read. Each value
// is read twice (every byte again); only two reads that agree are returned.
// When a map or slice is being written during the read and no two reads in a
// row agree, the value is returned as unavailable ("changed during the
// read"), never a mix of old and new words.
#pragma once

#include <optional>
#include <string>

#include "value/value.hpp"
#include "binary/go_binary.hpp"
#include "process/process.hpp"
#include "util/result.hpp"

namespace goscope {

// The same limits goscope read asks Delve for (session/delve_work.cpp,
// readLoadOf): by default strings up to 256 bytes, the first 64 elements of
// slices, arrays and maps, two levels of nested structs (Delve's
// MaxVariableRecurse), pointers followed; read --max-string, --max-elements
// and --max-depth set them.
struct DirectReadLimits {
  size_t maxString = 256;
  size_t maxElems = 64;
  int maxDepth = 2;
  int attempts = 5;  // reads of the whole value before it is called changed
};

// What the planner asks of one expression, from one resolution of it
// against DWARF.
struct DirectReadCheck {
  // A NoMatch error when `name` selects a field that DWARF shows does not
  // exist (`main.cfg.Nope` of a struct that embeds nothing): refused at
  // once, where Delve would stop the target to say the same.
  std::optional<Error> unknownField;
  // Why `name` cannot be read directly from `bin` (empty when it can).
  std::string refusal;
};
DirectReadCheck checkDirectRead(const GoBinary& bin, const std::string& name);

// checkDirectRead(bin, name).refusal.
std::string directReadRefusal(const GoBinary& bin, const std::string& name);

// Errors: NoMatch/BadTarget as findGlobal; TargetGone when the process
// exited; Permission when its memory cannot be read.
Result<Value> readGlobalDirect(const GoBinary& bin, const Process& proc, uint64_t loadBias,
                                       const std::string& name, const DirectReadLimits& limits = {});

}  // namespace goscope
