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
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "cli/prometheus_option.hpp"
#include "output/output.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

void report(output::Output& out, const api::CountSnapshot& snap, bool finalReport) {
  StopSignalsHeld held;  // a Ctrl-C must not cut a report (and the totals after it)
  for (const auto& f : snap.functions) {
    if (!f.latency) continue;
    if (f.latency->count == 0 && f.latency->mismatches == 0 && snap.functions.size() > 1) continue;
    out.latency(f.func, *f.latency, finalReport, snap.elapsedS);
  }
  out.flush();
}

}  // namespace

int runLatency(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs(strategyOptionSpecs(false, true));
  specs.push_back(prometheusOptionSpec());
  auto args = orRaise(parseArgs("latency", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope latency (-p PID | -c 'CMD ARGS' | -b BINARY) [-i SECS] [-d SECS] [--json] PATTERN...", specs);
    return 0;
  }
  ProbeRequest request = requestFromTraceArgs(args, Action::Latency);
  request.locations = args.positional();
  if (request.locations.empty()) raise({ErrorKind::Usage, "latency: name at least one function pattern, e.g. 'main.*'"});
  auto exporter = listenIfAsked(args);
  TracedTarget target = openTracedTarget(request);
  applyStrategyOptions(args, request);
  planOrRaise(args, request, target.binary(), request.target.pid);
  const bool json = args.has("json");
  auto session = orRaise(api::AggregateSession::start(std::move(target), request));
  printLineIfAny(session->accessNotice());
  std::fprintf(stderr, "%s\n", session->announcement().c_str());
  PrometheusServing serving(exporter.get(), *session);
  auto out = output::makeOutput(json);
  session->onBound([&](const api::BoundAction& a) { out->bound(a); });
  EndReason why = session->run([&](const api::CountSnapshot& snap) {
    report(*out, snap, false);
    if (!out->open()) session->stop();  // nobody reads any more (`| head`): the probes come off now
  });
  if (auto snap = session->snapshot()) report(*out, *snap, true);
  std::fprintf(stderr, "goscope: %s\n", describe(why).c_str());
  session->detach();
  printHiddenCalls(session->hiddenCalls());
  out->sessionCost(session->cost());
  out->flush();
  return exitCodeAfter(session->target(), why, args.has("strict"));
}

}  // namespace goscope::cli
