// JSON text for output lines. Boost.JSON writes every double in exponent
// form (0.75 -> "7.5E-1", 3.2 -> "3.2E0"): valid, but not what a person or
// a jq filter expects to see. This writer prints the shortest plain decimal
// that reads back as the same double, and is otherwise Boost's serialize.
#pragma once

#include <boost/json.hpp>

#include <string>

namespace goscope {

std::string jsonText(const boost::json::value& v);

}  // namespace goscope
