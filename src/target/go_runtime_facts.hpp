// Facts about the Go runtime of a target that the BPF programs need, from
// DWARF when present, else from what we know of its Go version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "target/go_binary.hpp"
#include "util/result.hpp"

namespace goscope {

// offsetof(runtime.g, goid).
uint32_t goidOffset(const GoBinary& bin);

struct GlobalVariable {
  std::string name;
  uint64_t address = 0;  // link-time
  uint64_t size = 0;
  std::string type;      // empty when only the symbol table knew it
};

// A package variable by name, from DWARF, else from .symtab. Errors: NoMatch
// (unknown), BadTarget (stripped: nothing to find it with).
Result<GlobalVariable> findGlobal(const GoBinary& bin, const std::string& name);

}  // namespace goscope
