// The Prometheus text format goscope serves (output/prometheus_text.hpp):
// label values escaped, which functions appear, histograms cumulative with
// +Inf and _count equal; and the addresses --prometheus refuses.
#include <doctest/doctest.h>

#include <string>

#include "output/prometheus_exporter.hpp"
#include "output/prometheus_text.hpp"

using namespace goscope;
using namespace goscope::output;

namespace {

api::FunctionCount fn(const std::string& name, uint64_t count) {
  api::FunctionCount f;
  f.func = name;
  f.count = count;
  return f;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Latency calls of these durations (ns), as the kernel would bucket them.
LatencyStats latencyOf(const std::vector<uint64_t>& ns) {
  LatencyStats s;
  s.buckets.assign(LatencyStats::kBuckets, 0);
  for (uint64_t v : ns) {
    s.buckets[LatencyStats::bucketOf(v)]++;
    s.count++;
    s.sumNs += v;
  }
  return s;
}

}  // namespace

TEST_CASE("prometheus text: label values escape backslash, double quote and line feed") {
  CHECK(escapeLabelValue("main.(*T).M") == "main.(*T).M");
  CHECK(escapeLabelValue("a\\b") == "a\\\\b");
  CHECK(escapeLabelValue("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(escapeLabelValue("two\nlines") == "two\\nlines");
  CHECK(escapeLabelValue("tab\tstays") == "tab\tstays");

  api::CountSnapshot snap;
  snap.functions.push_back(fn("main.f", 3));
  auto text = prometheusText(snap, {.pid = 42, .binary = "/srv/a \"b\"\\c\nd"});
  CHECK(has(text, "goscope_calls_total{function=\"main.f\",pid=\"42\",binary=\"/srv/a \\\"b\\\"\\\\c\\nd\"} 3\n"));
}

TEST_CASE("prometheus text: counters of the called functions, the one probed function even at 0, no pid for -b") {
  api::CountSnapshot one;
  one.functions.push_back(fn("main.doWork", 0));
  auto text = prometheusText(one, {.pid = 7, .binary = "/bin/x"});
  CHECK(text ==
        "# HELP goscope_calls_total Calls of the function since goscope attached its probe, counted in the kernel.\n"
        "# TYPE goscope_calls_total counter\n"
        "goscope_calls_total{function=\"main.doWork\",pid=\"7\",binary=\"/bin/x\"} 0\n");

  api::CountSnapshot many;
  many.functions = {fn("main.a", 5), fn("main.b", 0), fn("main.c", 18446744073709551615ull)};
  text = prometheusText(many, {.pid = std::nullopt, .binary = "/bin/x"});
  CHECK(has(text, "goscope_calls_total{function=\"main.a\",binary=\"/bin/x\"} 5\n"));
  CHECK(!has(text, "main.b"));
  CHECK(has(text, "goscope_calls_total{function=\"main.c\",binary=\"/bin/x\"} 18446744073709551615\n"));
  CHECK(!has(text, "pid="));
  CHECK(!has(text, "histogram"));  // count sessions have no latency
}

TEST_CASE("prometheus text: latency histograms are cumulative at powers of two, +Inf and _count the total") {
  const auto& bounds = latencyBoundsNs();
  REQUIRE(bounds.size() == 28);
  CHECK(bounds.front() == 256);
  CHECK(bounds.back() == (uint64_t{1} << 35));

  api::CountSnapshot snap;
  auto f = fn("main.f", 6);
  // 100 ns, 255 ns: under 256 ns; 256 ns: the kernel's bucket starts there,
  // so under 512 ns (the documented 1 ns caveat); 300 ns; 1 ms; an hour.
  f.latency = latencyOf({100, 255, 256, 300, 1000000, 3600ull * 1000000000});
  snap.functions.push_back(f);
  auto text = prometheusText(snap, {.pid = 1, .binary = "/b"});
  INFO(text);
  const std::string l = "{function=\"main.f\",pid=\"1\",binary=\"/b\"";
  CHECK(has(text, "# TYPE goscope_latency_seconds histogram\n"));
  CHECK(has(text, "goscope_latency_seconds_bucket" + l + ",le=\"2.56e-07\"} 2\n"));
  CHECK(has(text, "goscope_latency_seconds_bucket" + l + ",le=\"5.12e-07\"} 4\n"));
  CHECK(has(text, "goscope_latency_seconds_bucket" + l + ",le=\"0.000524288\"} 4\n"));
  CHECK(has(text, "goscope_latency_seconds_bucket" + l + ",le=\"0.001048576\"} 5\n"));  // 1 ms < 2^20 ns
  CHECK(has(text, "goscope_latency_seconds_bucket" + l + ",le=\"34.359738368\"} 5\n"));
  CHECK(has(text, "goscope_latency_seconds_bucket" + l + ",le=\"+Inf\"} 6\n"));
  CHECK(has(text, "goscope_latency_seconds_count" + l + "} 6\n"));
  CHECK(has(text, "goscope_latency_seconds_sum" + l + "} 3600.001000911\n"));

  // Every bucket line cumulative, in increasing le, +Inf last.
  long long last = -1;
  size_t lines = 0;
  for (size_t at = text.find("_bucket{"); at != std::string::npos; at = text.find("_bucket{", at + 1)) {
    size_t eol = text.find('\n', at);
    long long n = std::stoll(text.substr(text.rfind(' ', eol) + 1, eol));
    CHECK(n >= last);
    last = n;
    lines++;
  }
  CHECK(lines == bounds.size() + 1);

  // The kernel's count ahead of its buckets (a scrape between its two adds):
  // _count follows the buckets, as the format wants it equal to +Inf.
  snap.functions[0].latency->count = 7;
  text = prometheusText(snap, {.pid = 1, .binary = "/b"});
  CHECK(has(text, "goscope_latency_seconds_count" + l + "} 6\n"));
}

TEST_CASE("prometheus exporter: malformed addresses are usage errors, port 0 picks a free one") {
  for (const char* bad : {"9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http", "::1:9464",
                          "[::1:9464", "127.0.0.1:123456", ""}) {
    CAPTURE(bad);
    auto e = PrometheusExporter::listen(bad);
    REQUIRE(!e);
    CHECK(e.error().kind == ErrorKind::Usage);
    CHECK(e.error().message == std::string("--prometheus wants HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:9464, not '") + bad + "'");
  }
  auto e = PrometheusExporter::listen("127.0.0.1:0");
  REQUIRE(e);
  const std::string url = (*e)->url();
  CHECK(url.rfind("http://127.0.0.1:", 0) == 0);
  CHECK(url.ends_with("/metrics"));
  CHECK(url != "http://127.0.0.1:0/metrics");
  // The same port again: taken.
  std::string addr = url.substr(7, url.size() - 7 - 8);
  auto again = PrometheusExporter::listen(addr);
  REQUIRE(!again);
  CHECK(again.error().kind == ErrorKind::BadTarget);
}
