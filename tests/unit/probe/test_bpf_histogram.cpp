// The latency histogram shared by the BPF program and user space: bucket
// math, percentiles, funclatency-style log2 buckets, interval differences.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "goscope_shared.h"
#include "probe/latency_stats.hpp"

using goscope::LatencyStats;

namespace {
// What the kernel does per return, in user space.
void record(gs_lat_stats& k, uint64_t v) {
  k.count++;
  k.sum_ns += v;
  k.hist[gs_hist_bucket(v)]++;
  k.max_ns = std::max<__u64>(k.max_ns, v);
  k.min_inv = std::max<__u64>(k.min_inv, ~v);
}
}  // namespace

TEST_CASE("bpf histogram: every value falls inside its bucket, buckets are ordered and narrow") {
  CHECK(gs_hist_bucket(0) == 0);
  CHECK(gs_hist_bucket(15) == 15);
  CHECK(gs_hist_bucket(16) == 16);
  CHECK(gs_log2_u64(1) == 0);
  CHECK(gs_log2_u64(1ull << 40) == 40);
  CHECK(gs_log2_u64(~0ull) == 63);
  std::mt19937_64 rng(42);
  uint32_t prevBucket = 0;
  uint64_t prevValue = 0;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200000; i++) values.push_back(rng() >> (rng() % 64));
  for (uint64_t v = 0; v < 5000; v++) values.push_back(v);
  std::sort(values.begin(), values.end());
  for (uint64_t v : values) {
    uint32_t b = gs_hist_bucket(v);
    REQUIRE(b < GS_HIST_BUCKETS);
    CHECK(b >= prevBucket);  // monotonic
    if (v < (1ull << (GS_HIST_MAX_LOG + 1))) {
      REQUIRE(gs_hist_bucket_low(b) <= v);
      REQUIRE(v < gs_hist_bucket_high(b));
      // Width at most 1/16 of the lower bound (above the exact range).
      if (v >= GS_HIST_SUB) CHECK((gs_hist_bucket_high(b) - gs_hist_bucket_low(b)) * GS_HIST_SUB <= gs_hist_bucket_low(b));
    } else {
      CHECK(b == GS_HIST_BUCKETS - 1);
    }
    prevBucket = b;
    prevValue = v;
  }
  (void)prevValue;
  // Buckets tile the range without gaps.
  for (uint32_t b = 0; b + 1 < GS_HIST_BUCKETS; b++) CHECK(gs_hist_bucket_high(b) == gs_hist_bucket_low(b + 1));
}

TEST_CASE("bpf histogram: percentiles within 3.2% of the exact ones") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(2e6), 0.6);  // around 2 ms
  auto k = std::make_unique<gs_lat_stats>();
  std::memset(k.get(), 0, sizeof *k);
  std::vector<uint64_t> exact;
  for (int i = 0; i < 100000; i++) {
    uint64_t v = static_cast<uint64_t>(dist(rng));
    exact.push_back(v);
    record(*k, v);
  }
  std::sort(exact.begin(), exact.end());
  LatencyStats s = LatencyStats::fromKernel(*k);
  CHECK(s.count == exact.size());
  CHECK(s.minNs == exact.front());
  CHECK(s.maxNs == exact.back());
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    CAPTURE(p);
    uint64_t want = exact[static_cast<size_t>(std::ceil(p / 100.0 * exact.size())) - 1];
    double err = std::abs(static_cast<double>(s.percentile(p)) - static_cast<double>(want)) / static_cast<double>(want);
    CHECK(err < 0.032);
  }
  CHECK(s.percentile(0) >= s.minNs);
  CHECK(s.percentile(100) == s.maxNs);
  CHECK(std::abs(s.meanNs() - static_cast<double>(k->sum_ns) / 100000.0) < 1e-6);
}

TEST_CASE("bpf histogram: one value, no values") {
  LatencyStats empty = LatencyStats::fromKernel(gs_lat_stats{});
  CHECK(empty.count == 0);
  CHECK(empty.minNs == 0);
  CHECK(empty.percentile(50) == 0);
  CHECK(empty.log2Buckets().empty());
  auto k = std::make_unique<gs_lat_stats>();
  std::memset(k.get(), 0, sizeof *k);
  record(*k, 2000000);
  LatencyStats one = LatencyStats::fromKernel(*k);
  CHECK(one.percentile(50) == 2000000);  // clamped to [min, max]
  CHECK(one.percentile(99) == 2000000);
}

TEST_CASE("bpf histogram: log2 buckets are funclatency's") {
  auto k = std::make_unique<gs_lat_stats>();
  std::memset(k.get(), 0, sizeof *k);
  // bcc funclatency puts v in slot floor(log2(v)) (0 and 1 in slot 0) and prints [2^s, 2^(s+1)-1].
  std::vector<uint64_t> vals = {0, 1, 2, 3, 4, 7, 8, 1000, 1023, 1024, 2047, 3000000};
  std::map<int, uint64_t> want;
  for (uint64_t v : vals) {
    record(*k, v);
    want[v <= 1 ? 0 : static_cast<int>(gs_log2_u64(v))]++;
  }
  auto lb = LatencyStats::fromKernel(*k).log2Buckets();
  REQUIRE(!lb.empty());
  CHECK(lb.front().low == 0);
  CHECK(lb.front().high == 1);
  CHECK(lb.back().low == (1ull << 21));
  CHECK(lb.back().high == (1ull << 22) - 1);
  uint64_t total = 0;
  for (const auto& b : lb) {
    int slot = b.low == 0 ? 0 : static_cast<int>(gs_log2_u64(b.low));
    CHECK(b.count == want[slot]);
    if (b.low) CHECK(b.high == 2 * b.low - 1);
    total += b.count;
  }
  CHECK(total == vals.size());
  CHECK(lb.size() == 22);  // 0..21, empty ones in between included
}

TEST_CASE("bpf histogram: log2 buckets in usecs and msecs (latency -u, -m)") {
  auto k = std::make_unique<gs_lat_stats>();
  std::memset(k.get(), 0, sizeof *k);
  // Values well inside their unit's power of two (no log-linear bucket
  // straddles these boundaries): 1.5 us, 3 us, 5 us, 1.2 ms, 2.5 ms, 900 ns.
  for (uint64_t v : {1500ull, 3000ull, 5000ull, 1200000ull, 2500000ull, 900ull}) record(*k, v);
  const auto stats = LatencyStats::fromKernel(*k);
  std::map<uint64_t, uint64_t> us, ms;  // low -> count
  for (const auto& b : stats.log2Buckets(goscope::TimeUnit::Us)) us[b.low] += b.count;
  for (const auto& b : stats.log2Buckets(goscope::TimeUnit::Ms)) ms[b.low] += b.count;
  CHECK(us[0] == 2);     // 0.9 and 1.5 us: [0, 1]
  CHECK(us[2] == 1);     // 3 us
  CHECK(us[4] == 1);     // 5 us
  CHECK(us[1024] == 1);  // 1,200 us
  CHECK(us[2048] == 1);  // 2,500 us
  CHECK(ms[0] == 5);     // everything below 2 ms
  CHECK(ms[2] == 1);     // 2.5 ms
  CHECK(std::string(goscope::histogramUnitName(goscope::TimeUnit::Ms)) == "msecs");
  CHECK(stats.log2Buckets(goscope::TimeUnit::Ns).size() == stats.log2Buckets().size());
}

TEST_CASE("bpf histogram: the difference of two readings") {
  auto k = std::make_unique<gs_lat_stats>();
  std::memset(k.get(), 0, sizeof *k);
  for (int i = 0; i < 10; i++) record(*k, 1000);
  LatencyStats a = LatencyStats::fromKernel(*k);
  for (int i = 0; i < 5; i++) record(*k, 5000000);
  k->mismatches = 2;
  LatencyStats b = LatencyStats::fromKernel(*k);
  LatencyStats d = b.since(a);
  CHECK(d.count == 5);
  CHECK(d.sumNs == 25000000);
  CHECK(d.mismatches == 2);
  CHECK(d.minNs >= LatencyStats::bucketLow(LatencyStats::bucketOf(5000000)));
  CHECK(d.maxNs == 5000000);
  CHECK(d.percentile(50) <= 5000000);
  CHECK(d.percentile(50) > 4700000);
}
