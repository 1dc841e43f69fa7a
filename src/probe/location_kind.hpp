// What a location on the command line names: a function (a pattern goscope
// matches against pclntab, e.g. `main.(*Server).Handle` or `main.*`), or a
// place only Delve resolves (`file.go:12`, `*0x4567`, `+2`, `-1`). The one
// rule for it: the planner's facts (locationsAreFunctions) ask it.
#pragma once

#include <cctype>
#include <string_view>

namespace goscope {

inline bool namesFunction(std::string_view location) {
  return !location.empty() && location.find(':') == std::string_view::npos && location[0] != '*' &&
         location[0] != '+' && location[0] != '-' && !std::isdigit(static_cast<unsigned char>(location[0]));
}

}  // namespace goscope
