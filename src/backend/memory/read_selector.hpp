// Which `read` expressions memory alone answers, and where they are: a
// package variable (`main.cfg`), a field of one through nested structs
// (`main.cfg.Name`, `main.cfg.Limits.Max`), and `len(X)` / `cap(X)` of
// either. Everything else (a call, an index, a field behind a pointer, a
// promoted field of an embedded struct, arithmetic) is Delve's to evaluate:
// the strategy sends it there, or refuses it under --no-stop.
//
// A field is read at the variable's address plus the field offsets DWARF
// gives, with the field's own DWARF type, exactly as the variable would be;
// Delve prints `main.cfg.Name = "zoo" (string)` for it, and so does the
// direct read. len and cap come from the value's header words (a string's,
// slice's, map's or channel's), read as the whole value is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "binary/dwarf_info.hpp"

namespace goscope {

struct ReadSelector {
  std::string builtin;  // "", "len" or "cap"
  std::string path;     // the variable and its fields: "main.cfg.Name"
};

// nullopt when `expr` is not of these forms (then Delve evaluates it).
std::optional<ReadSelector> parseReadSelector(std::string_view expr);

// The package-variable names `path` may start with, longest first: a Go
// variable's name has no dot, but the last element of its package path may
// ("gopkg.in/yaml.v3.Version"), so every split after the last '/' is tried.
std::vector<std::string> variableCandidates(std::string_view path);

struct SelectorPlace {
  uint64_t address = 0;  // link-time (add the load bias for PIE)
  std::string type;      // the selected value's DWARF type name
};
struct SelectorResolution {
  std::optional<SelectorPlace> place;
  std::string why;          // no place: why not (for the user)
  std::string missingType;  // no place, no why: this type's DWARF must be read first
  // The field does not exist: the struct has no field of that name and
  // embeds nothing a promoted field could come from (Delve would only say so).
  bool noSuchField = false;
};
SelectorResolution resolveSelector(const DwarfInfo& d, std::string_view path);

// Whether `builtin` ("len", "cap") applies to a value of `kind`, as Go's own.
bool builtinApplies(const std::string& builtin, GoType::Kind kind);

}  // namespace goscope
