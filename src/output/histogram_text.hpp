// bcc funclatency-style text histograms: "low -> high : count |****|".
#pragma once

#include <string>
#include <vector>

#include "probe/latency_stats.hpp"

namespace goscope {

std::string renderLog2Histogram(const std::vector<Log2Bucket>& buckets, const char* unit = "nsecs");
// "1.23ms", "850ns", "2.10s"
std::string humanDuration(uint64_t ns);

}  // namespace goscope
