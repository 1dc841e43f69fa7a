// Delve's values (rpc::Variable) for people and programs: converted into
// goscope's value model and printed by its one renderer (value/render.hpp),
// so a value prints the same whichever path read it.
#pragma once

#include <boost/json.hpp>

#include <string>

#include "rpc/delve_types.hpp"

namespace goscope::delve {

std::string valueText(const rpc::Variable& v);
boost::json::value valueJson(const rpc::Variable& v);
// The Go type: Delve's type name, or the kind's default name for the
// untyped results of expressions like len(x) (Delve leaves their type empty).
std::string typeName(const rpc::Variable& v);

}  // namespace goscope::delve
