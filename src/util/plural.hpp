// "1 function", "3 functions": counts in messages read as English.
#pragma once

#include <cstddef>
#include <string>

namespace goscope {

inline std::string countOf(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace goscope
