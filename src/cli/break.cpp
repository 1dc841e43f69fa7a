// goscope break: capture on every hit of a function, until -n hits, -d
// seconds or Ctrl-C. Two plans serve it: a Delve breakpoint (full Go types,
// expressions, locals, conditions; each hit stops the whole process for a
// round trip to dlv, about a millisecond) or, when the hit rate measured in
// the kernel would cost the target more than --max-overhead, BPF entry
// probes that capture the arguments without stopping it. The strategy layer
// chooses, --explain says why; both print the same lines and JSON.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/delve_options.hpp"
#include "cli/probe_options.hpp"
#include "cli/read_limit_options.hpp"
#include "cli/signature_specs.hpp"
#include "cli/strategy_options.hpp"
#include "output/output.hpp"
#include "util/plural.hpp"
#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

// The hit rate, over a window that means something. A session cut short by
// -n lasts mostly set-up and poll latency: 3 hits of a function called
// 98,458 times a second once read "220 hits/s" (3 over 13.6 ms). So, for
// -n: between the first hit and the last (their own time stamps) when there
// are enough hits to tell; else the rate the plan measured in the kernel
// before attaching, if it did; else, over a session of a second or more,
// hits over the session; else none. -d and Ctrl-C: over the whole session.
struct HitTimes {
  uint64_t firstNs = 0, lastNs = 0;
  void add(uint64_t ns) {
    if (!firstNs) firstNs = ns;
    lastNs = ns;
  }
};

constexpr long long kHitsForARate = 10;  // a burst of 2 or 3 calls says little about a rate

std::string rateText(const api::EventTotals& t, const HitTimes& h, std::optional<double> measuredRate) {
  char buf[112];
  if (t.end == api::EventEnd::HitCount) {
    if (t.calls >= kHitsForARate && h.lastNs > h.firstNs) {
      std::snprintf(buf, sizeof buf, " (%.1f hits/s between the first hit and the last)",
                    static_cast<double>(t.calls - 1) * 1e9 / static_cast<double>(h.lastNs - h.firstNs));
      return buf;
    }
    if (measuredRate && *measuredRate > 0) {  // 0: none seen in its 250 ms, which says little once hits came
      std::snprintf(buf, sizeof buf, " (%.1f hits/s measured in the kernel before the session)", *measuredRate);
      return buf;
    }
    if (t.activeS < 1) return "";
  }
  std::snprintf(buf, sizeof buf, " (%.1f hits/s)", t.activeS > 0 ? t.calls / t.activeS : 0.0);
  return buf;
}

void printTotals(const api::EventTotals& t, bool cond, const HitTimes& h, std::optional<double> measuredRate) {
  std::fflush(stdout);
  const std::string rate = rateText(t, h, measuredRate);
  if (t.path == Backend::Bpf) {
    output::toStderr("goscope: %lld hits in %.2f s%s; %s\n", t.calls, t.activeS, rate.c_str(), api::describe(t.end));
    // A session that began on Delve and moved to BPF stopped the target
    // before the move: said, not "not stopped" (the cost line says how long).
    if (t.cost.stoppedMs > 0)
      output::toStderr("goscope: PID %d was stopped %.1f ms by Delve before the move to BPF; detached %s in %.1f ms\n",
                   t.pid, t.cost.stoppedMs, countOf(t.detachedPoints, "probe").c_str(), t.detachMs);
    else
      output::toStderr("goscope: PID %d was not stopped (BPF path); detached %s in %.1f ms\n", t.pid,
                   countOf(t.detachedPoints, "probe").c_str(), t.detachMs);
    printDecodedWithoutBias(t.decodedWithoutBias);
    printHiddenCalls(t.hiddenCalls);
    return;
  }
  output::toStderr("goscope: %lld hits in %.2f s%s%s\n", t.calls, t.activeS, rate.c_str(),
               t.failed && t.end != api::EventEnd::TargetExited ? "" : ("; " + std::string(api::describe(t.end))).c_str());
  // Delve also stops the target at every trap it resumes by itself (a
  // condition that is false): goscope does not see those.
  reportTimings(t.costs, cond ? " (plus Delve's own stops to test --cond)" : nullptr);
}

}  // namespace

int runBreak(const std::vector<std::string>& argv) {
  std::vector<OptionSpec> extra = {
      {"args", 0, false, "capture the function's arguments"},
      {"locals", 0, false, "capture its local variables"},
      {"stack", 0, true, "capture N stack frames"},
      {"cond", 0, true, "stop only when this Go expression is true (e.g. 'i == 7')"},
      {"count", 'n', true, "stop after COUNT hits"},
      {"duration", 'd', true, "stop after SECS seconds"},
      {"strict", 0, false, "a target that exits is an error (exit 8), not the session's normal end (exit 0)"},
      {"force-signature", 0, false, "use the signature given even where the binary's DWARF disagrees"},
  };
  for (auto& o : strategyOptionSpecs(true)) extra.push_back(o);
  for (auto& o : readLimitSpecs(kHitReadLimits)) extra.push_back(o);
  auto specs = delveOptionSpecs(extra);
  auto args = orRaise(parseArgs("break", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope break -p PID FUNC [EXPR...] [--args] [--locals] [--stack N] [--cond EXPR] "
                         "[-n COUNT] [-d SECS] [--json] [--strategy auto|delve|bpf] [--explain]",
                         specs)
              << "FUNC: a function, or a signature for a stripped binary: 'main.add(x int, y int) int' (as trace takes)\n";
    return 0;
  }
  const auto& pos = args.positional();
  if (pos.empty()) raise({ErrorKind::Usage, "break: name a function, e.g. main.doWork"});

  ProbeRequest request;
  request.action = Action::Break;
  request.target.pid = delvePidOrRaise(args, "break");
  addLocations({pos[0]}, request);  // a name, or a signature as trace takes it
  request.capture.exprs.assign(pos.begin() + 1, pos.end());
  request.capture.args = args.has("args");
  request.capture.locals = args.has("locals");
  request.capture.stackFrames = static_cast<int>(orRaise(args.getInt("stack", 0, 1, 100)));
  request.capture.stack = request.capture.stackFrames > 0;
  request.capture.cond = args.get("cond");
  // What is loaded of each value at a hit: Delve's LoadConfig; a string's
  // bytes are also what a BPF probe reads (up to its 256).
  request.hitLimits = readLimitsOrRaise(args, kHitReadLimits);
  request.capture.maxString = static_cast<uint16_t>(std::min<uint32_t>(request.hitLimits.maxString, kProbeMaxString));
  request.maxHits = orRaise(args.getInt("count", 0, 1, 1'000'000'000));
  request.durationS = args.has("duration") ? orRaise(args.getSeconds("duration", 0)) : 0;
  request.dlvArgs = args.all("dlv-arg");
  if (auto d = args.get("dlv")) request.dlvPath = *d;
  applyStrategyOptions(args, request);
  TracedTarget target = openTracedTarget(request);
  checkSignatures(request, target.binary(), args.has("force-signature"));
  TargetFacts facts;
  Plan plan = planOrRaise(args, request, target, &facts);

  auto session = orRaise(api::startEventSession(request, plan, std::move(target), output::noticeToStderr));
  output::lineToStderr(session->announcement());
  auto out = output::makeOutput(args.has("json"));
  const output::HitShape shape{!request.capture.exprs.empty(), request.capture.args, request.capture.locals,
                               request.capture.stackFrames};
  long long hits = 0;
  HitTimes times;
  session->onBound([&](const api::BoundAction& a) { out->bound(a); });
  api::EventTotals totals = session->run([&](const api::Call& c) {
    out->breakHit(c, ++hits, shape);
    times.add(c.tsNs);
    return out->open();  // false when nobody reads any more (`| head`): stop holding the target
  });
  printTotals(totals, request.capture.cond.has_value(), times, facts.measuredRatePerS);
  // The cost line on stderr; with --json the stream also ends with a
  // session_cost object, as trace's, count's and latency's do.
  out->sessionCost(totals.cost);
  out->flush();
  return exitCodeAfter(totals, args.has("strict"));
}

}  // namespace goscope::cli
