#include "backend/delve/value_render.hpp"

#include "value/from_delve.hpp"
#include "value/render.hpp"

namespace goscope::delve {

std::string valueText(const rpc::Variable& v) { return renderText(valueFromDelve(v)); }
boost::json::value valueJson(const rpc::Variable& v) { return renderJson(valueFromDelve(v)); }
std::string typeName(const rpc::Variable& v) { return valueFromDelve(v).type; }

}  // namespace goscope::delve
