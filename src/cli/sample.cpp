// goscope sample: the low-frequency controller. Once per interval, with the
// target running: halt, set a breakpoint at FUNC that captures the
// expressions, continue until it hits (or a timeout: a miss), record, clear,
// continue. Between samples the target runs with no breakpoint at all, so
// it pays only the few milliseconds of each pause, which each record shows.
// Without --at, each interval reads the expressions from memory instead
// (session/memory_sample.hpp): the target is never stopped.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/delve_options.hpp"
#include "cli/probe_options.hpp"
#include "cli/read_limit_options.hpp"
#include "cli/strategy_options.hpp"
#include "output/output.hpp"
#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

// Without --at: every interval, the expressions read from memory.
int sampleFromMemory(const ProbeRequest& request, TracedTarget& target, bool json, bool strict) {
  output::toStderr("goscope: sampling PID %d from memory every %g s, never stopping it; Ctrl-C to stop\n",
               *request.target.pid, request.intervalS);
  auto out = output::makeOutput(json);
  const output::HitShape shape{true, false, false, 0};
  auto totals = orRaise(api::sampleMemory(request, target, [&](const api::MemorySample& s) {
    out->sample({s.index, s.elapsedS, 0, nullptr, {}, 0, &s.values}, shape);
    return out->open();
  }));
  // A target someone else holds in a stop (state T) is read all the same
  // and left in it; its values cannot have changed meanwhile, so say so.
  output::toStderr("goscope: %d samples read from memory, %.2f ms at most; PID %d was never stopped%s\n",
               totals.taken, totals.readMaxMs, *request.target.pid,
               totals.targetStopped ? " by goscope (it is in a stop of its own, state T, left so: its values stand still)"
                                    : "");
  if (totals.targetExited) {
    if (strict)
      raise({ErrorKind::TargetGone, "PID " + std::to_string(*request.target.pid) + " exited during the session",
             "everything recorded before it exited is printed above"});
    output::toStderr("goscope: PID %d exited; the session ended with it\n", *request.target.pid);
  }
  return 0;
}

}  // namespace

int runSample(const std::vector<std::string>& argv) {
  auto specs = delveOptionSpecs({
      {"at", 0, true, "the function whose next call is sampled (without it: read from memory, never stopping)"},
      {"args", 0, false, "capture its arguments too"},
      {"interval", 'i', true, "one sample every SECS seconds (default 1)"},
      {"duration", 'd', true, "stop after SECS seconds"},
      {"timeout", 0, true, "a miss when FUNC is not called within SECS (default: the interval)"},
      {"strategy", 0, true, "auto (default) or delve: sampling is Delve's"},
      {"explain", 0, false, "print the plan, and every reason behind it, on stderr"},
      {"strict", 0, false, "a target that exits is an error (exit 8), not the session's normal end (exit 0)"},
  });
  for (const auto& o : readLimitSpecs(kHitReadLimits)) specs.push_back(o);
  auto args = orRaise(parseArgs("sample", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope sample -p PID [--at FUNC] [EXPR...] [--args] [-i SECS] [-d SECS] [--json]", specs);
    return 0;
  }
  auto at = args.get("at");
  const std::vector<std::string> exprs = args.positional();
  if (!at && args.has("args"))
    raise({ErrorKind::Usage, "sample: --args are a call's: name the function with --at FUNC"});
  if (!at && args.has("timeout"))
    raise({ErrorKind::Usage, "sample: --timeout is how long to wait for FUNC's call: it goes with --at FUNC"});
  if (exprs.empty() && !args.has("args"))
    raise({ErrorKind::Usage, at ? "sample: name at least one expression (e.g. main.counter) or --args"
                                : "sample: name at least one expression (e.g. main.counter), or --at FUNC"});
  const double intervalS = orRaise(args.getSeconds("interval", 1));
  const double durationS = args.has("duration") ? orRaise(args.getSeconds("duration", 0)) : 0;
  const double timeoutS = orRaise(args.getSeconds("timeout", intervalS));
  ProbeRequest request;
  request.action = Action::Sample;
  request.target.pid = delvePidOrRaise(args, "sample");
  if (at) request.locations = {*at};
  request.capture.exprs = exprs;
  request.capture.args = args.has("args");
  request.hitLimits = readLimitsOrRaise(args, kHitReadLimits);
  request.intervalS = intervalS;
  request.durationS = durationS;
  request.dlvArgs = args.all("dlv-arg");
  if (auto d = args.get("dlv")) request.dlvPath = *d;
  applyStrategyOptions(args, request);
  TracedTarget target = openTracedTarget(request);
  // The plan says how: from memory (no --at, plain variables) or Delve.
  const Plan plan = planOrRaise(args, request, target);
  if (plan.backend == Backend::DirectRead) return sampleFromMemory(request, target, args.has("json"), args.has("strict"));

  auto out = output::makeOutput(args.has("json"));
  const output::HitShape shape{!exprs.empty(), request.capture.args, false, 0};
  auto totals = orRaise(api::sample(
      request, timeoutS, [](const std::string& line) { output::lineToStderr(line); },
      [&](const api::Sample& s) {
        out->sample({s.index, s.elapsedS, s.pauseMs, s.call ? &*s.call : nullptr, *at, timeoutS}, shape);
        return out->open();
      },
      nullptr, &target));
  output::toStderr("goscope: %d samples (%d misses); pause per sample %.1f ms on average, %.1f ms at most\n",
               totals.taken, totals.misses, totals.taken ? totals.pauseSumMs / totals.taken : 0.0, totals.pauseMaxMs);
  reportTimings(totals.costs);
  // The target's exit ends the session normally (docs/errors.md), unless --strict.
  if (totals.targetExited && !args.has("strict")) {
    output::toStderr("goscope: PID %d exited; the session ended with it\n", *request.target.pid);
    return 0;
  }
  if (totals.failed) raise(*totals.failed);
  if (totals.detachFailed) raise(*totals.detachFailed);
  return 0;
}

}  // namespace goscope::cli
