// goscope latency: per-function latency, measured in the kernel. Entry and
// return are paired by goroutine (not thread: goroutines migrate), with the
// returns seen by uprobes on every RET instruction — never a uretprobe, which
// crashes Go programs. Prints funclatency's log2 histogram plus count, min,
// p50, p90, p99 and max; returns that found no entry (calls already running
// when we attached) are reported, not hidden.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/interval_report.hpp"
#include "cli/signature_specs.hpp"
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "cli/prometheus_option.hpp"
#include "output/output.hpp"
#include "util/plural.hpp"
#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

// Prints each interval's own latencies (bcc funclatency -i: each interval's
// histogram, not the running total) and, at the end, the whole session's.
class LatencyReporter {
 public:
  LatencyReporter(output::Output& out, TimeUnit unit, double intervalS) : out_(out), unit_(unit), intervalS_(intervalS) {}

  void interval(const api::CountSnapshot& snap) {
    if (last_.size() != snap.functions.size()) last_.assign(snap.functions.size(), LatencyStats{});
    output::Output::Interval in = intervalOf(snap, lastT_, intervalS_);
    cost_.fill(snap, in);
    for (size_t i = 0; i < snap.functions.size(); i++) {
      const auto& f = snap.functions[i];
      if (!f.latency) continue;
      LatencyStats mine = f.latency->since(last_[i]);
      last_[i] = *f.latency;
      if (mine.count == 0 && mine.mismatches == 0 && snap.functions.size() > 1) continue;
      out_.latency(f.func, mine, {false, snap.elapsedS, in, unit_, f.probeCostNs, f.probeCostLowNs, snap.costFigures});
    }
    out_.intervalEnd(in);
    lastT_ = snap.elapsedS;
    out_.flush();
  }

  void totals(const api::CountSnapshot& snap) {
    for (const auto& f : snap.functions) {
      if (!f.latency) continue;
      if (f.latency->count == 0 && f.latency->mismatches == 0 && snap.functions.size() > 1) continue;
      out_.latency(f.func, *f.latency,
                   {true, snap.elapsedS, std::nullopt, unit_, f.probeCostNs, f.probeCostLowNs, snap.costFigures});
    }
    out_.flush();
  }

 private:
  output::Output& out_;
  TimeUnit unit_;
  double intervalS_;
  std::vector<LatencyStats> last_;  // each function's reading at the last interval
  IntervalCost cost_;
  double lastT_ = 0;
};

}  // namespace

int runLatency(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs(strategyOptionSpecs(false, true));
  specs.push_back({"milliseconds", 'm', false, "histogram buckets in milliseconds"});
  specs.push_back({"microseconds", 'u', false, "histogram buckets in microseconds"});
  specs.push_back({"entry", 0, false, "probe the plain function entry and its RETs, not the cheaper stack-check branch or call sites"});
  specs.push_back(prometheusOptionSpec());
  auto args = orRaise(parseArgs("latency", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope latency (-p PID | -c 'CMD ARGS' | -b BINARY) [-i SECS] [-d SECS] [-m | -u] [--json] PATTERN...", specs);
    return 0;
  }
  if (args.has("milliseconds") && args.has("microseconds"))
    raise({ErrorKind::Usage, "latency: -m and -u do not go together", "-m: milliseconds, -u: microseconds, neither: nanoseconds"});
  const TimeUnit unit = args.has("milliseconds") ? TimeUnit::Ms : args.has("microseconds") ? TimeUnit::Us : TimeUnit::Ns;
  ProbeRequest request = requestFromTraceArgs(args, Action::Latency);
  if (args.positional().empty()) raise({ErrorKind::Usage, "latency: name at least one function pattern, e.g. 'main.*'"});
  addLocations(args.positional(), request);  // a pattern, or a signature as trace takes it (--filter then names its arguments)
  request.plainEntry = args.has("entry");
  auto exporter = listenIfAsked(args);
  TracedTarget target = openTracedTarget(request);
  checkSignatures(request, target.binary(), false);
  applyStrategyOptions(args, request);
  const Plan plan = planOrRaise(args, request, target);
  const bool json = args.has("json");
  auto session = orRaise(api::AggregateSession::start(std::move(target), request, plan));
  printLineIfAny(session->accessNotice());
  output::lineToStderr(session->announcement());
  PrometheusServing serving(exporter.get(), *session);
  auto out = output::makeOutput(json);
  session->onBound([&](const api::BoundAction& a) { out->bound(a); });
  LatencyReporter reporter(*out, unit, request.intervalS);
  EndReason why = session->run([&](const api::CountSnapshot& snap) {
    reporter.interval(snap);
    if (!out->open()) session->stop();  // nobody reads any more (`| head`): the probes come off now
  });
  // The reading taken as the session ended, printed before the detach.
  auto snap = session->snapshot();
  if (snap) reporter.totals(*snap);
  output::noticeToStderr(describe(why));
  if (snap) printEndLate(*snap, request.durationS);
  auto detached = session->detach();
  output::toStderr("goscope: detached %s in %.1f ms\n", countOf(detached.points, "probe").c_str(), detached.ms);
  printHiddenCalls(session->hiddenCalls());
  out->sessionCost(session->cost());
  out->flush();
  return exitCodeAfter(session->target(), why, args.has("strict"));
}

}  // namespace goscope::cli
