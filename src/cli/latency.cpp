// goscope latency: per-function latency, measured in the kernel. Entry and
// return are paired by goroutine (not thread: goroutines migrate), with the
// returns seen by uprobes on every RET instruction — never a uretprobe, which
// crashes Go programs. Prints funclatency's log2 histogram plus count, min,
// p50, p90, p99 and max; returns that found no entry (calls already running
// when we attached) are reported, not hidden.
#include <boost/json.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "output/histogram_text.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

boost::json::object latencyJson(const std::string& func, const LatencyStats& s) {
  boost::json::array buckets;
  for (const auto& b : s.log2Buckets()) buckets.push_back(boost::json::object{{"low", b.low}, {"high", b.high}, {"count", b.count}});
  return boost::json::object{{"func", func},
                             {"count", s.count},
                             {"min_ns", s.minNs},
                             {"p50_ns", s.percentile(50)},
                             {"p90_ns", s.percentile(90)},
                             {"p99_ns", s.percentile(99)},
                             {"max_ns", s.maxNs},
                             {"mean_ns", static_cast<uint64_t>(s.meanNs())},
                             {"mismatches", s.mismatches},
                             {"buckets", std::move(buckets)}};
}

void printText(const std::string& func, const LatencyStats& s) {
  std::printf("\n%s\n", func.c_str());
  if (s.count == 0) {
    std::printf("  no completed calls\n");
    return;
  }
  std::printf("  count %llu  min %s  p50 %s  p90 %s  p99 %s  max %s  mean %s\n",
              static_cast<unsigned long long>(s.count), humanDuration(s.minNs).c_str(),
              humanDuration(s.percentile(50)).c_str(), humanDuration(s.percentile(90)).c_str(),
              humanDuration(s.percentile(99)).c_str(), humanDuration(s.maxNs).c_str(),
              humanDuration(static_cast<uint64_t>(s.meanNs())).c_str());
  if (s.mismatches)
    std::printf("  %llu returns without a seen entry (calls in flight when probes were attached)\n",
                static_cast<unsigned long long>(s.mismatches));
  std::fputs(renderLog2Histogram(s.log2Buckets()).c_str(), stdout);
}

void report(const api::CountSnapshot& snap, bool json, bool finalReport) {
  StopSignalsHeld held;  // a Ctrl-C must not cut a report (and the totals after it)
  for (const auto& f : snap.functions) {
    if (!f.latency) continue;
    const LatencyStats& s = *f.latency;
    if (s.count == 0 && s.mismatches == 0 && snap.functions.size() > 1) continue;
    if (json) {
      auto o = latencyJson(f.func, s);
      if (finalReport) o["final"] = true;
      std::cout << boost::json::serialize(o) << '\n';
    } else {
      printText(f.func, s);
    }
  }
  std::fflush(stdout);
}

}  // namespace

int runLatency(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs(strategyOptionSpecs(false));
  auto args = orRaise(parseArgs("latency", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope latency (-p PID | -c 'CMD ARGS' | -b BINARY) [-i SECS] [-d SECS] [--json] PATTERN...", specs);
    return 0;
  }
  ProbeRequest request = requestFromTraceArgs(args, Action::Latency);
  request.locations = args.positional();
  if (request.locations.empty()) raise({ErrorKind::Usage, "latency: name at least one function pattern, e.g. 'main.*'"});
  TracedTarget target = openTracedTarget(request);
  applyStrategyOptions(args, request);
  planOrRaise(args, request, target.binary(), request.target.pid);
  const bool json = args.has("json");
  auto session = orRaise(api::CountSession::start(std::move(target), request));
  std::fprintf(stderr, "%s\n", session->announcement().c_str());
  EndReason why = session->run([&](const api::CountSnapshot& snap) { report(snap, json, false); });
  if (auto snap = session->snapshot()) report(*snap, json, true);
  std::fprintf(stderr, "goscope: %s\n", describe(why).c_str());
  session->detach();
  raiseIfTargetGone(session->target(), why);
  return 0;
}

}  // namespace goscope::cli
