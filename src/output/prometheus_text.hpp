// What `--prometheus ADDR` serves at /metrics: a count session's snapshot in
// Prometheus' text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/). Pure: the
// HTTP side is output/prometheus_exporter.hpp.
//
//   goscope_calls_total{function="main.add",pid="123",binary="/srv/app"} 42
//   goscope_latency_seconds_bucket{function=...,pid=...,binary=...,le="2.56e-07"} 3
//   goscope_latency_seconds_sum{...} 0.0012
//   goscope_latency_seconds_count{...} 42
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/goscope.hpp"

namespace goscope::output {

// The labels every series of one session carries besides `function`.
struct PrometheusLabels {
  std::optional<int> pid;  // none for -b (every process running the binary): no pid label
  std::string binary;      // the executable's path
};

// The body of a /metrics response for `snap`. Which functions appear
// follows `goscope count`'s totals: those called at least once, or the one
// function when only one is probed (a series then exists from the start).
std::string prometheusText(const api::CountSnapshot& snap, const PrometheusLabels& labels);

// A label value as the format wants it between its double quotes:
// backslash, double quote and line feed escaped (\\, \", \n).
std::string escapeLabelValue(std::string_view value);

// The histogram's upper bounds ("le") in nanoseconds, without +Inf: powers of
// two from 256 ns to 2^35 ns (34.4 s). Powers of two because the kernel's
// log-linear buckets (probe/latency_stats.hpp) never straddle one, so every
// cumulative count is exact rather than interpolated; a factor of two between
// bounds keeps histogram_quantile() within that factor at 29 series per
// function. One caveat of regrouping: a call of exactly 2^k ns is counted
// under the next bound (the kernel's bucket starts at 2^k), 1 ns off.
const std::vector<uint64_t>& latencyBoundsNs();

// The Content-Type of the body.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace goscope::output
