#include "output/prometheus_text.hpp"

#include <charconv>

namespace goscope::output {

namespace {

// The shortest text that reads back as the same double (Prometheus parses
// sample values and "le" as Go floats).
std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// {function="...",pid="...",binary="..."} without the closing brace, so a
// histogram can add its "le".
std::string labelsOpen(const std::string& function, const PrometheusLabels& l) {
  std::string s = "{function=\"" + escapeLabelValue(function) + "\"";
  if (l.pid) s += ",pid=\"" + std::to_string(*l.pid) + "\"";
  s += ",binary=\"" + escapeLabelValue(l.binary) + "\"";
  return s;
}

bool shown(const api::FunctionCount& f, const api::CountSnapshot& snap) {
  return f.count > 0 || snap.functions.size() == 1;
}

void histogram(std::string& out, const std::string& labels, const LatencyStats& stats) {
  // Cumulative counts at each bound: every kernel bucket lies below one
  // power of two, so a bucket belongs under `le` when it starts below it.
  uint64_t below = 0;
  size_t b = 0;
  for (uint64_t bound : latencyBoundsNs()) {
    for (; b < stats.buckets.size() && LatencyStats::bucketLow(static_cast<uint32_t>(b)) < bound; b++)
      below += stats.buckets[b];
    out += "goscope_latency_seconds_bucket" + labels + ",le=\"" + number(static_cast<double>(bound) / 1e9) + "\"} " +
           std::to_string(below) + "\n";
  }
  for (; b < stats.buckets.size(); b++) below += stats.buckets[b];
  // +Inf and _count are the buckets' total, not stats.count: the kernel adds
  // to the count and to a bucket in two steps, and a scrape between them must
  // still show _count equal to the +Inf bucket, as the format requires.
  out += "goscope_latency_seconds_bucket" + labels + ",le=\"+Inf\"} " + std::to_string(below) + "\n";
  out += "goscope_latency_seconds_sum" + labels + "} " + number(static_cast<double>(stats.sumNs) / 1e9) + "\n";
  out += "goscope_latency_seconds_count" + labels + "} " + std::to_string(below) + "\n";
}

}  // namespace

std::string escapeLabelValue(std::string_view value) {
  std::string s;
  s.reserve(value.size());
  for (char c : value) {
    if (c == '\\') s += "\\\\";
    else if (c == '"') s += "\\\"";
    else if (c == '\n') s += "\\n";
    else s += c;
  }
  return s;
}

const std::vector<uint64_t>& latencyBoundsNs() {
  static const std::vector<uint64_t> bounds = [] {
    std::vector<uint64_t> v;
    for (int k = 8; k <= 35; k++) v.push_back(uint64_t{1} << k);
    return v;
  }();
  return bounds;
}

std::string prometheusText(const api::CountSnapshot& snap, const PrometheusLabels& labels) {
  std::string out;
  out += "# HELP goscope_calls_total Calls of the function since goscope attached its probe, counted in the kernel.\n";
  out += "# TYPE goscope_calls_total counter\n";
  for (const auto& f : snap.functions)
    if (shown(f, snap)) out += "goscope_calls_total" + labelsOpen(f.func, labels) + "} " + std::to_string(f.count) + "\n";

  bool anyLatency = false;
  for (const auto& f : snap.functions) anyLatency = anyLatency || f.latency.has_value();
  if (!anyLatency) return out;
  out += "# HELP goscope_latency_seconds Time from the function's entry to its return in the same goroutine.\n";
  out += "# TYPE goscope_latency_seconds histogram\n";
  for (const auto& f : snap.functions)
    if (f.latency && shown(f, snap)) histogram(out, labelsOpen(f.func, labels), *f.latency);
  return out;
}

}  // namespace goscope::output
