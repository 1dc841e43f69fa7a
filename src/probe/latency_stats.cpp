#include "probe/latency_stats.hpp"

#include <algorithm>
#include <cmath>

#include "goscope_shared.h"

namespace goscope {

static_assert(LatencyStats::kBuckets == GS_HIST_BUCKETS, "LatencyStats::kBuckets is the kernel's bucket count");

uint64_t LatencyStats::bucketLow(uint32_t b) { return gs_hist_bucket_low(b); }
uint64_t LatencyStats::bucketHigh(uint32_t b) { return gs_hist_bucket_high(b); }
uint32_t LatencyStats::bucketOf(uint64_t ns) { return gs_hist_bucket(ns); }

LatencyStats LatencyStats::fromKernel(const gs_lat_stats& k) {
  LatencyStats s;
  s.count = k.count;
  s.sumNs = k.sum_ns;
  s.minNs = k.min_inv ? ~k.min_inv : 0;
  s.maxNs = k.max_ns;
  s.mismatches = k.mismatches;
  s.buckets.assign(k.hist, k.hist + GS_HIST_BUCKETS);
  return s;
}

uint64_t LatencyStats::percentile(double p) const {
  uint64_t total = 0;
  for (uint64_t c : buckets) total += c;
  if (total == 0) return 0;
  if (p >= 100.0 && maxNs) return maxNs;
  if (p <= 0.0 && count) return minNs;
  // The rank (1-based) of the wanted call among `total` sorted ones.
  double rank = std::max(1.0, std::ceil(p / 100.0 * static_cast<double>(total)));
  uint64_t before = 0;
  for (uint32_t b = 0; b < buckets.size(); b++) {
    uint64_t n = buckets[b];
    if (n == 0) continue;
    if (static_cast<double>(before + n) >= rank) {
      // Spread the bucket's n calls evenly over [low, high): the i-th of them
      // (1-based) sits at low + (i - 0.5) * width / n.
      double low = static_cast<double>(bucketLow(b));
      double high = static_cast<double>(bucketHigh(b));
      double i = rank - static_cast<double>(before);
      double v = low + (i - 0.5) * (high - low) / static_cast<double>(n);
      uint64_t r = static_cast<uint64_t>(std::llround(v));
      if (count && maxNs) r = std::clamp(r, minNs, maxNs);
      return r;
    }
    before += n;
  }
  return maxNs;
}

uint64_t nanosPer(TimeUnit u) { return u == TimeUnit::Ms ? 1000000 : u == TimeUnit::Us ? 1000 : 1; }

const char* histogramUnitName(TimeUnit u) { return u == TimeUnit::Ms ? "msecs" : u == TimeUnit::Us ? "usecs" : "nsecs"; }

std::vector<Log2Bucket> LatencyStats::log2Buckets() const { return log2Buckets(TimeUnit::Ns); }

std::vector<Log2Bucket> LatencyStats::log2Buckets(TimeUnit unit) const {
  // In ns, log-linear bucket b lies entirely inside one power of two
  // [2^m, 2^(m+1)), so the log2 histogram is an exact regrouping; bcc puts 0
  // and 1 together.
  const uint64_t per = nanosPer(unit);
  std::vector<uint64_t> pow2(64, 0);
  for (uint32_t b = 0; b < buckets.size(); b++) {
    if (!buckets[b]) continue;
    uint64_t low = bucketLow(b) / per;
    unsigned m = low == 0 ? 0 : gs_log2_u64(low);
    pow2[m] += buckets[b];
  }
  int first = -1, last = -1;
  for (int m = 0; m < 64; m++)
    if (pow2[m]) {
      if (first < 0) first = m;
      last = m;
    }
  std::vector<Log2Bucket> out;
  if (first < 0) return out;
  for (int m = first; m <= last; m++) {
    Log2Bucket lb;
    lb.low = m == 0 ? 0 : (1ull << m);
    lb.high = (m == 63 ? ~0ull : (1ull << (m + 1)) - 1);
    lb.count = pow2[m];
    out.push_back(lb);
  }
  return out;
}

LatencyStats LatencyStats::since(const LatencyStats& earlier) const {
  LatencyStats d;
  d.count = count - std::min(count, earlier.count);
  d.sumNs = sumNs - std::min(sumNs, earlier.sumNs);
  d.mismatches = mismatches - std::min(mismatches, earlier.mismatches);
  d.buckets.assign(buckets.size(), 0);
  int first = -1, last = -1;
  for (size_t b = 0; b < buckets.size(); b++) {
    uint64_t prev = b < earlier.buckets.size() ? earlier.buckets[b] : 0;
    d.buckets[b] = buckets[b] - std::min(buckets[b], prev);
    if (d.buckets[b]) {
      if (first < 0) first = static_cast<int>(b);
      last = static_cast<int>(b);
    }
  }
  if (first >= 0) {
    d.minNs = std::max(minNs, bucketLow(static_cast<uint32_t>(first)));
    d.maxNs = std::min(maxNs, bucketHigh(static_cast<uint32_t>(last)) - 1);
    if (d.minNs > d.maxNs) d.minNs = d.maxNs;
  }
  return d;
}

}  // namespace goscope
