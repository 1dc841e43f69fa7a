// Go function signatures as goscope prints them, and the pieces of Go's
// symbol names (generic shape instantiations) needed to compare them.
//
// The format, e.g. `main.(*Server).Handle(s *main.Server, req main.Request) (main.Response, error)`:
//  - the function's symbol name, then every parameter DWARF lists, receiver
//    first, as `name type` (never grouped: `x int, y int`);
//  - types as DWARF names them: package-qualified by import path (`main.Point`,
//    `*net/http.Request`), `interface {}`, `[]string`, `func(int) int`;
//  - results: none -> nothing; one unnamed -> ` T`; several unnamed ->
//    ` (T1, T2)`; named -> ` (n int, err error)`.
// Names the compiler synthesizes: `~rN` is an unnamed result (printed without
// a name); `~bN` is a result declared `_` (printed `_`). Parameters the
// source leaves unnamed or names `_` (receivers included) are not in Go 1.19's
// DWARF at all, so they cannot appear; should a producer emit them as `~pN`,
// `~bN`, `_` or without a name, they print as `_`. The generic dictionary
// prints as DWARF has it: `.dict uintptr` first in -N -l builds, absent in
// optimized ones.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace goscope {

struct SignatureParam {
  std::string_view name;
  std::string_view type;
  bool isResult = false;
};

std::string formatSignature(std::string_view funcName, std::span<const SignatureParam> params);

// A printed signature cut into its parts: `main.(*S).M(s *main.S) (int, error)`
// -> name `main.(*S).M`, params `(s *main.S)`, results ` (int, error)`.
// nullopt if the text is not a signature in this format.
struct SignatureParts {
  std::string_view name, params, results;
};
std::optional<SignatureParts> splitSignature(std::string_view sig);

// A generic instantiation's symbol name split into its stem and type
// arguments: `main.Map[go.shape.int_0,go.shape.string_1]` -> stem `main.Map[]`,
// args {`go.shape.int_0`, `go.shape.string_1`}; `main.(*Stack[go.shape.int_0]).Push`
// -> stem `main.(*Stack[]).Push`. Only the first bracket group (the one that
// names the function or its receiver type) is taken apart.
struct GenericName {
  std::string stem;
  std::vector<std::string> typeArgs;  // empty when the name is not generic
};
GenericName splitGenericName(std::string_view name);

// The type parameter index of a shape type argument: `go.shape.int_0` -> 0,
// `go.shape.*uint8_1` -> 1; -1 if `arg` is not a shape.
int shapeIndex(std::string_view arg);

// Replaces every occurrence of each shape argument (longest first, so
// `go.shape.int_1` never eats part of `go.shape.int_10`) with the type
// parameter name at its index. Used to compare a shape instantiation with
// the generic declaration in the source: `xs []go.shape.int_0` -> `xs []T`.
std::string replaceShapes(std::string_view text, const std::vector<std::string>& shapeArgs,
                          const std::vector<std::string>& typeParamNames);

}  // namespace goscope
