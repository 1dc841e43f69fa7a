#include "cli/trace_options.hpp"

#include <cstdio>

#include "backend/bpf/privileges.hpp"
#include "target/target.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

std::vector<OptionSpec> traceOptionSpecs(std::vector<OptionSpec> extra) {
  std::vector<OptionSpec> specs = {
      {"pid", 'p', true, "trace a running process"},
      {"command", 'c', true, "start 'CMD ARGS' and trace it from its first instruction"},
      {"binary", 'b', true, "trace every process running this file, including later ones"},
      {"interval", 'i', true, "print a report every SECS seconds"},
      {"duration", 'd', true, "stop after SECS seconds"},
      {"json", 0, false, "one JSON object per line"},
      {"help", 'h', false, "this help"},
  };
  specs.insert(specs.end(), extra.begin(), extra.end());
  return specs;
}

TraceSetup prepareTrace(const Args& args, const std::string& sub, bool patternsRequired) {
  std::vector<Pattern> patterns;
  for (const auto& p : args.positional()) patterns.push_back(orRaise(Pattern::parse(p)));
  if (patterns.empty() && patternsRequired)
    raise({ErrorKind::Usage, sub + ": name at least one function pattern, e.g. 'main.*'"});
  LoopOptions loop;
  if (args.has("interval")) loop.intervalS = orRaise(args.getSeconds("interval", 1));
  if (args.has("duration")) loop.durationS = orRaise(args.getSeconds("duration", 0));

  // Before the target is opened or a -c command started: without the
  // capabilities nothing below can be attached, and the error should say so
  // first (not after a command has run unobserved).
  orRaise(bpf::checkPrivileges());

  TargetSpec spec;
  if (auto p = args.get("pid")) spec.pid = orRaise(parsePid(*p));
  if (auto c = args.get("command")) spec.command = *c;
  if (auto b = args.get("binary")) spec.binary = *b;
  spec.commandStdoutToStderr = args.has("json");
  auto target = TracedTarget::open(spec);
  if (!target) {
    Error e = target.error();
    if (e.kind == ErrorKind::Usage) e.message = sub + ": " + e.message;
    raise(e);
  }
  installStopSignals();
  return TraceSetup{std::move(*target), std::move(patterns), loop};
}

void announce(const TraceSetup& setup, const Selection& sel, const bpf::AttachStats& stats, bool json) {
  announce(setup.target, sel, stats, json);
}

void raiseIfTargetGone(const TracedTarget& target, EndReason why) {
  if (target.isLaunched() || target.isBinaryWide()) return;
  if (why == EndReason::TargetExited)
    raise({ErrorKind::TargetGone, target.describe() + " exited during the session",
           "everything recorded before it exited is printed above"});
  if (why == EndReason::TargetExeced)
    raise({ErrorKind::TargetGone, target.describe() + " replaced its program during the session (exec); the probes were in the old one",
           "everything recorded before the exec is printed above"});
}

ProbeRequest requestFromTraceArgs(const Args& args, Action action, const TraceSetup& setup) {
  ProbeRequest r;
  r.action = action;
  if (auto p = args.get("pid")) r.target.pid = orRaise(parsePid(*p));
  if (auto c = args.get("command")) r.target.command = *c;
  if (auto b = args.get("binary")) r.target.binary = *b;
  r.target.commandStdoutToStderr = args.has("json");
  for (const auto& p : setup.patterns) r.locations.push_back(p.text());
  r.durationS = setup.loop.durationS;
  r.intervalS = setup.loop.intervalS;
  return r;
}

void announce(const TracedTarget& target, const Selection& sel, const bpf::AttachStats& stats, bool json) {
  (void)json;
  std::fprintf(stderr, "goscope: %zu functions, %zu probes attached to %s in %.1f ms (%s)%s; Ctrl-C to stop\n",
               sel.functions.size(), stats.points, target.describe().c_str(), stats.attachMs,
               stats.uprobeMulti ? "uprobe_multi" : "perf-event uprobes",
               sel.skippedUnsafe ? (", " + std::to_string(sel.skippedUnsafe) + " unsafe to probe left out").c_str() : "");
}

}  // namespace goscope::cli
