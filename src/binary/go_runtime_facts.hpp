// Facts about the Go runtime of a target that the BPF programs need, from
// DWARF when present, else from what we know of its Go version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "binary/go_binary.hpp"
#include "util/result.hpp"

namespace goscope {

// offsetof(runtime.g, goid).
uint32_t goidOffset(const GoBinary& bin);

// Go 1.17 brought the register ABI on amd64: arguments and results in RAX,
// RBX, ..., the current g in R14 (docs/go-runtime.md). A target built by an
// older Go passes them on the stack and keeps g in thread-local storage, so
// what goscope reads as arguments, results and goroutines would be garbage.
// Empty when the target has the register ABI (or its version is unknown);
// else the reason, for a refusal.
std::string stackAbiRefusal(const GoBinary& bin);

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
