// A value Delve loaded (rpc::Variable, Delve's wire type) as a goscope
// value. Only the conversion: how it prints is value/render.hpp's.
#pragma once

#include "rpc/delve_types.hpp"
#include "value/value.hpp"

namespace goscope {

// Untyped results of expressions like len(x) get Go's default type names.
Value valueFromDelve(const rpc::Variable& v);

}  // namespace goscope
