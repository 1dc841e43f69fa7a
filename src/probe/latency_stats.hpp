// LatencyStats: one probe's latency aggregate as kept by the kernel — count,
// sum, min, max, returns without an entry, and a log-linear histogram (every
// power of two split into GS_HIST_SUB linear buckets) — with percentiles and
// the coarser log2 buckets of bcc's funclatency computed from it.
#pragma once

#include <cstdint>
#include <vector>

// The kernel's record (bpf/goscope_shared.h): that header, the BPF programs'
// ABI, is seen only by the layers that talk to the kernel, not by the users
// of this aggregate (the public API, output).
struct gs_lat_stats;

namespace goscope {

// The unit of a text histogram's buckets (bcc funclatency's default, -u, -m).
enum class TimeUnit { Ns, Us, Ms };
uint64_t nanosPer(TimeUnit u);
const char* histogramUnitName(TimeUnit u);  // "nsecs", "usecs", "msecs"

struct Log2Bucket {
  uint64_t low = 0;   // inclusive, ns
  uint64_t high = 0;  // inclusive, ns (bcc prints "low -> high")
  uint64_t count = 0;
};

struct LatencyStats {
  uint64_t count = 0;
  uint64_t sumNs = 0;
  uint64_t minNs = 0;  // 0 when count == 0
  uint64_t maxNs = 0;
  uint64_t mismatches = 0;        // returns that found no entry
  std::vector<uint64_t> buckets;  // kBuckets log-linear buckets

  // GS_HIST_BUCKETS (checked against it in latency_stats.cpp).
  static constexpr uint32_t kBuckets = 624;

  static LatencyStats fromKernel(const gs_lat_stats& k);

  double meanNs() const { return count ? static_cast<double>(sumNs) / static_cast<double>(count) : 0.0; }
  // p in [0, 100]: the value below which p% of the calls fall, interpolated
  // inside its bucket (error below half a bucket, ~3%) and clamped to
  // [min, max]; p <= 0 is min, p >= 100 is max. 0 when there are no calls.
  uint64_t percentile(double p) const;
  // funclatency-style power-of-two buckets, from the first to the last
  // non-empty one: [0,1], [2,3], [4,7], ...
  std::vector<Log2Bucket> log2Buckets() const;
  // The same in `unit` (bounds in that unit, as funclatency -u/-m prints
  // them). A log-linear bucket goes whole to the power of two that holds its
  // low bound in that unit: one that straddles a boundary counts below it
  // (an error within one log-linear bucket, ~3%). Ns is log2Buckets().
  std::vector<Log2Bucket> log2Buckets(TimeUnit unit) const;
  // The difference of two readings of the same probe (for interval output):
  // count, sum, buckets and mismatches subtract; min and max are those of the
  // later reading's new buckets, as far as the histogram tells.
  LatencyStats since(const LatencyStats& earlier) const;

  // Bucket bounds in ns: [low, high).
  static uint64_t bucketLow(uint32_t b);
  static uint64_t bucketHigh(uint32_t b);
  static uint32_t bucketOf(uint64_t ns);
};

}  // namespace goscope
