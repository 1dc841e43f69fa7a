// Whether a `set VAR=VALUE` may be written, judged before anything is: Delve
// parses VALUE as a Go expression and converts it silently (99999999999999999999999
// became 200376420520689663 in an int64, 1<<70 became 0). goscope accepts, for
// a variable of a number or bool kind, a literal that fits its type or a
// plain name (another variable, which must exist); for a pointer, what Delve
// accepts; nothing else (Delve 1.20 cannot assign strings, slices or
// structs). Internal to src/session; pure, unit-tested.
#pragma once

#include <optional>
#include <string>

#include "util/result.hpp"

namespace goscope::session {

enum class WriteKind { Signed, Unsigned, Float, Bool, Pointer, Other };

// `type`: the variable's Go type ("int64", "uint8", "main.Level"); `bits`
// comes from it for the predeclared integer types, 64 otherwise.
// Ok(std::nullopt): VALUE is a literal that fits. Ok(name): VALUE is a plain
// name the caller must check exists. Error (Usage): why it cannot be written.
Result<std::optional<std::string>> checkWrite(WriteKind kind, const std::string& type, const std::string& value);

}  // namespace goscope::session
