#include "output/clock_text.hpp"

#include <time.h>

#include <cstdio>

namespace goscope {

namespace {

std::string timeText(std::chrono::system_clock::time_point t, bool utc, const char* format) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  tm parts{};
  utc ? gmtime_r(&secs, &parts) : localtime_r(&secs, &parts);
  char buf[40];
  size_t n = strftime(buf, sizeof buf, format, &parts);
  std::snprintf(buf + n, sizeof buf - n, ".%03d%s", static_cast<int>(ms % 1000), utc ? "Z" : "");
  return buf;
}

}  // namespace

std::string clockText(std::chrono::system_clock::time_point t) { return timeText(t, false, "%H:%M:%S"); }
std::string isoTime(std::chrono::system_clock::time_point t) { return timeText(t, true, "%Y-%m-%dT%H:%M:%S"); }

std::string wallClock() {
  time_t now = time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
}

}  // namespace goscope
