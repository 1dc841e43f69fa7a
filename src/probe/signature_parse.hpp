// The signature a user gives for a function of a stripped binary (no DWARF),
// in Go syntax: `main.add(x int, y int) int`, `main.add(x, y int) int`,
// `main.parse(s string, n int) (int, error)`, `main.(*Server).Handle(s *main.Server, path string) (n int, err error)`.
// Parameters may be all named or all unnamed (`main.add(int, int) int`);
// `xs ...int` is `xs []int`. Unnamed arguments are named `~p0`, `~p1`...,
// unnamed results `~r0`, `~r1`..., as Go's compiler names them.
//
// Only the syntax is checked here; which types can be laid out without DWARF
// is the ShapeBuilder's business (type_shape.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "probe/abi_layout.hpp"
#include "util/result.hpp"

namespace goscope {

struct UserSignature {
  std::string funcName;           // `main.add`, `main.(*Server).Handle`
  std::vector<ParamSpec> params;  // receiver (as the first parameter) and arguments, then results
};

// Errors: Usage, saying what is wrong with the text.
Result<UserSignature> parseUserSignature(std::string_view text);

}  // namespace goscope
