// Time stamps in output lines.
#pragma once

#include <chrono>
#include <string>

namespace goscope {

// "12:04:05.123" (local time) and "2025-01-02T12:04:05.123Z" (UTC).
std::string clockText(std::chrono::system_clock::time_point t);
std::string isoTime(std::chrono::system_clock::time_point t);
// "12:04:05": now, local time (trace's and count's lines).
std::string wallClock();

}  // namespace goscope
