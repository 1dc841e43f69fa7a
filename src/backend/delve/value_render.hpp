// A value Delve loaded (rpc::Variable), rendered for people and for
// programs: Go-like text (strings quoted, structs {Name: "x", Port: 8080},
// slices with their len and cap, maps, pointers, interfaces with their
// dynamic type) and JSON (numbers as numbers, structs as objects, slices as
// arrays, nil as null). Pure: unit-tested on recorded Delve replies.
#pragma once

#include <boost/json.hpp>

#include <string>

#include "rpc/delve_types.hpp"

namespace goscope::delve {

// The value as Go-like text. Values Delve did not load completely say so:
// "abc...+97 more" (a capped string), [1, 2, ...+98 more], {...} (past the
// recursion limit).
std::string valueText(const rpc::Variable& v);

// The value as JSON. Integers that fit are numbers, floats that are not
// finite and complex numbers are strings, nil is null, a map is an object
// keyed by its keys' text, an interface or pointer is what it points to, a
// struct past the recursion limit is the string "{...}".
boost::json::value valueJson(const rpc::Variable& v);

// The Go type: Delve's type name, or the kind's name for the untyped
// results of expressions like len(x) (Delve leaves their type empty).
std::string typeName(const rpc::Variable& v);

}  // namespace goscope::delve
