// Addresses in output are hex strings ("0x4553a0"): JSON numbers lose
// precision above 2^53 in many consumers, and hex is how tools show addresses.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace goscope {

inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace goscope
