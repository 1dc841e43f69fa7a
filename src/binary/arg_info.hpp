// The runtime's own description of a function's arguments: FUNCDATA_ArgInfo,
// which Go (1.17 and later) keeps in every binary, stripped or not, so that a
// traceback can print `main.ship({0x2a, {0x4b2c10, 0x2}}, 0x3)`. It says how
// many words each argument has and how they group (strings, slices,
// interfaces, structs and arrays in braces), not their types; results are
// not in it. The encoding, the compiler's limits and what the offsets are
// relative to: docs/go-runtime.md, "The traceback's argument layout".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope {

class GoBinary;
struct GoFunction;

struct ArgInfoItem {
  enum class Kind : uint8_t {
    Word,    // one non-aggregate value: `size` bytes at `offset` of the argument frame
    Group,   // an aggregate: `items`
    More,    // the layout stops here (10 components, or 5 levels deep): `...`
    Beyond,  // a word whose offset did not fit the encoding (>= 0xf0): `_`
  };
  Kind kind = Kind::Word;
  uint8_t offset = 0;  // Word: from the argument frame's start (the spill slots of register arguments)
  uint8_t size = 0;    // Word: bytes
  std::vector<ArgInfoItem> items;  // Group
};

// The arguments in order. Errors: BadTarget when the bytes do not end where
// the encoding says, or nest deeper or longer than the compiler writes.
Result<std::vector<ArgInfoItem>> parseArgInfo(std::span<const uint8_t> bytes);

// `({w, {w, w}}, w)`: the shape, one `w` per word (for list and --explain).
std::string argInfoShape(const std::vector<ArgInfoItem>& args);
// Words in order, groups flattened (`...` and `_` are not words).
size_t argInfoWords(const std::vector<ArgInfoItem>& args);

// The function's layout from the binary; nullopt when it has none: no
// arguments, assembly, or Go before 1.17. Errors: BadTarget (malformed).
Result<std::optional<std::vector<ArgInfoItem>>> readArgInfo(const GoBinary& bin, const GoFunction& fn);

// A function readArgInfo finds no layout for takes no arguments when it is
// Go code (not assembly) with an empty argument frame, in a binary whose
// functions have layouts (Go 1.17+; the 1.16 table format says nothing).
bool takesNoArguments(const GoBinary& bin, const GoFunction& fn);

}  // namespace goscope
