// A signature the user gives (`main.add(x string) string`) is meant for
// stripped binaries. On a binary whose DWARF describes the function, a
// signature that disagrees with DWARF would decode every call wrongly and
// silently (`main.hot(id string)` on `id int`): DWARF wins, with a
// warning, unless the user forces their own.
#pragma once

#include <optional>
#include <string>

#include "binary/go_binary.hpp"
#include "binary/runtime_type_graph.hpp"

namespace goscope {

struct SignatureCheck {
  bool useSignature = true;  // false: lay the function out from DWARF instead
  std::string warning;       // empty when DWARF agrees or is absent
};

// `signature` for the function `funcName` of `bin` (`graph`: its runtime
// type records, shared by the signatures of one command); `forced`: the user's
// signature is used even where DWARF disagrees (still warned).
SignatureCheck checkSignature(const GoBinary& bin, RuntimeTypeGraph& graph, const std::string& funcName,
                              const std::string& signature,
                              bool forced);

// The argument frame the signature makes against the one the binary's
// function table records for `funcName` (_func.args: stack arguments and
// results plus the register arguments' spill slots, abi_layout.hpp). They
// differ when an argument or result is missing, extra or of another size:
// every value after it would be read from the wrong register. An error
// (Usage) naming both sizes; nothing when they agree, or when either is
// unknown (assembly functions, a function the table does not have).
std::optional<Error> checkSignatureFrame(const GoBinary& bin, RuntimeTypeGraph& graph, const std::string& funcName,
                                         const std::string& signature);

}  // namespace goscope
