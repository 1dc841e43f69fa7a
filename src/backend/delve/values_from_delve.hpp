// A value Delve loaded (rpc::Variable, Delve's wire type) as a goscope
// value. Only the conversion: how it prints is value/render.hpp's.
#pragma once

#include "rpc/delve_types.hpp"
#include "value/value.hpp"

#include <string>
#include <vector>

namespace goscope {

// Untyped results of expressions like len(x) get Go's default type names.
// What Delve did not load (past its MaxVariableRecurse) comes back cut
// (`elided`, with where it lives), never as nil: docs/delve.md "Values Delve
// did not load".
Value valueFromDelve(const rpc::Variable& v);

// The values of a breakpoint's expressions, each named by the expression as
// the user typed it (`exprs`), not by Delve's Variable.Name, which is only the
// last step of the path ("data.val" for ctx.(*context.valueCtx).val). Delve
// returns one Variable per expression, in order (docs/delve.md); one without
// an expression keeps Delve's name.
std::vector<Value> valuesOfExpressions(const std::vector<rpc::Variable>& vars, const std::vector<std::string>& exprs);

}  // namespace goscope
