// A signature the user gives (`main.add(x string) string`) is meant for
// stripped binaries. On a binary whose DWARF describes the function, a
// signature that disagrees with DWARF would decode every call wrongly and
// silently (issue #12: `main.hot(id string)` on `id int`): DWARF wins, with a
// warning, unless the user forces their own.
#pragma once

#include <string>

#include "target/go_binary.hpp"

namespace goscope {

struct SignatureCheck {
  bool useSignature = true;  // false: lay the function out from DWARF instead
  std::string warning;       // empty when DWARF agrees or is absent
};

// `signature` for the function `funcName` of `bin`; `forced`: the user's
// signature is used even where DWARF disagrees (still warned).
SignatureCheck checkSignature(const GoBinary& bin, const std::string& funcName, const std::string& signature,
                              bool forced);

}  // namespace goscope
