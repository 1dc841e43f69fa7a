#include "output/histogram_text.hpp"

#include <algorithm>
#include <cstdio>

namespace goscope {

std::string humanDuration(uint64_t ns) {
  char buf[32];
  if (ns < 1000) std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000) std::snprintf(buf, sizeof buf, "%.2fus", static_cast<double>(ns) / 1e3);
  else if (ns < 1000000000) std::snprintf(buf, sizeof buf, "%.2fms", static_cast<double>(ns) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string renderLog2Histogram(const std::vector<Log2Bucket>& buckets, const char* unit) {
  uint64_t maxCount = 0;
  for (const auto& b : buckets) maxCount = std::max(maxCount, b.count);
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%24s : %-10s distribution\n", unit, "count");
  out += line;
  constexpr int kWidth = 40;
  for (const auto& b : buckets) {
    int stars = maxCount ? static_cast<int>((b.count * kWidth + maxCount - 1) / maxCount) : 0;
    if (b.count == 0) stars = 0;
    std::string bar(static_cast<size_t>(stars), '*');
    bar.resize(kWidth, ' ');
    std::snprintf(line, sizeof line, "%10llu -> %-10llu : %-10llu |%s|\n", static_cast<unsigned long long>(b.low),
                  static_cast<unsigned long long>(b.high), static_cast<unsigned long long>(b.count), bar.c_str());
    out += line;
  }
  return out;
}

}  // namespace goscope
