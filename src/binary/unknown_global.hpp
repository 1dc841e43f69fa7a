// Is an expression a package variable that the binary shows does not exist?
// Asking Delve would stop the target ~0.5 s to relay its "main (type
// func()) is not a struct"; the binary's own DWARF, symbol table and
// function table answer at once.
#pragma once

#include <optional>
#include <string>

#include "binary/go_binary.hpp"
#include "util/result.hpp"

namespace goscope {

// A NoMatch error ("no package variable main.nosuch in PROG") when `expr`
// is `pkg.name` or `pkg.name.field...` (identifiers only; also inside
// `len(...)` or `cap(...)`), `pkg` is a
// package the binary has functions of, and nothing of that name exists:
// no DWARF variable, constant, function or type called `pkg.name` or
// `.../pkg.name` (Delve accepts a package's short name), no such symbol,
// no such function. nullopt otherwise, including for anything Delve may
// resolve another way: other expressions, unqualified names (locals),
// Delve's pseudo-variables (runtime.curg), and binaries without DWARF.
std::optional<Error> unknownGlobal(const GoBinary& bin, const std::string& expr);

}  // namespace goscope
