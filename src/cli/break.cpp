// goscope break: capture on every hit of a function, until -n hits, -d
// seconds or Ctrl-C. Two plans serve it: a Delve breakpoint (full Go types,
// expressions, locals, conditions; each hit stops the whole process for a
// round trip to dlv, about a millisecond) or, when the hit rate measured in
// the kernel would cost the target more than --max-overhead, BPF entry
// probes (break_bpf.cpp) that capture the arguments without stopping it.
// The strategy layer chooses; --explain says why.
#include <boost/json.hpp>

#include <cstdio>
#include <iostream>

#include "cli/break_bpf.hpp"
#include "cli/command.hpp"
#include "cli/delve_hits.hpp"
#include "cli/delve_options.hpp"
#include "cli/strategy_options.hpp"
#include "target/target.hpp"
#include "util/json_text.hpp"

namespace goscope::cli {

namespace {

// Prints each hit as it comes, so that what was recorded survives any end.
class HitPrinter {
 public:
  HitPrinter(CaptureParts parts, bool json) : parts_(std::move(parts)), json_(json) {}

  // False when nobody reads any more (`| head`): stop holding the target.
  bool print(const delve::BreakpointHit& h) {
    StopSignalsHeld held;  // a Ctrl-C must not cut a line (stdout would drop the rest)
    auto now = std::chrono::system_clock::now();
    if (json_) {
      boost::json::object o{{"time", isoTime(now)}, {"hit", ++count_}};
      for (auto& kv : hitJson(h, parts_)) o[kv.key()] = std::move(kv.value());
      std::cout << jsonText(o) << std::endl;
    } else {
      ++count_;
      std::cout << clockText(now) << ' ' << hitText(h, parts_) << std::endl;
    }
    return static_cast<bool>(std::cout);
  }

 private:
  CaptureParts parts_;
  bool json_;
  long long count_ = 0;
};

// Errors of the Delve path that the BPF path does not have: dlv missing or
// failing, a Go release outside Delve's window, ptrace refused (another
// debugger holds the process).
bool delveSpecific(const Error& e) {
  return e.kind == ErrorKind::External || e.kind == ErrorKind::BadTarget || e.kind == ErrorKind::Permission;
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
  };
  for (auto& o : strategyOptionSpecs(true)) extra.push_back(o);
  auto specs = delveOptionSpecs(extra);
  auto args = orRaise(parseArgs("break", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope break -p PID FUNC [EXPR...] [--args] [--locals] [--stack N] [--cond EXPR] "
                         "[-n COUNT] [-d SECS] [--json] [--strategy auto|delve|bpf] [--explain]",
                         specs);
    return 0;
  }
  const auto& pos = args.positional();
  if (pos.empty()) raise({ErrorKind::Usage, "break: name a function, e.g. main.doWork"});
  BreakOptions bo;
  bo.location = pos[0];
  bo.parts.exprs.assign(pos.begin() + 1, pos.end());
  bo.parts.args = args.has("args");
  bo.parts.locals = args.has("locals");
  bo.parts.stack = static_cast<int>(orRaise(args.getInt("stack", 0, 1, 100)));
  bo.maxHits = orRaise(args.getInt("count", 0, 1, 1'000'000'000));
  bo.durationS = args.has("duration") ? orRaise(args.getSeconds("duration", 0)) : 0;
  bo.json = args.has("json");
  bo.pid = delvePidOrRaise(args, "break");

  ProbeRequest request;
  request.action = Action::Break;
  request.target.pid = bo.pid;
  request.locations = {bo.location};
  request.capture.args = bo.parts.args;
  request.capture.locals = bo.parts.locals;
  request.capture.stack = bo.parts.stack > 0;
  request.capture.exprs = bo.parts.exprs;
  request.capture.cond = args.get("cond");
  request.durationS = bo.durationS;
  request.dlvArgs = args.all("dlv-arg");
  applyStrategyOptions(args, request);
  installStopSignals();
  Plan plan;
  {
    Target target = openProcessForPlanning(bo.pid);
    plan = planOrRaise(args, request, *target.binary, bo.pid);
  }
  if (plan.backend == Backend::Bpf) return runBreakWithBpf(bo);

  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<delve::DelveSession> session;
  try {
    session = attachOrRaise(bo.pid, args);
  } catch (const FatalError& e) {
    // A forced --strategy is honoured or refused, never changed.
    if (request.strategy != StrategyChoice::Auto || plan.fallback != Backend::Bpf || !delveSpecific(e.error)) throw;
    reportFallback(Backend::Delve, Backend::Bpf, e.error);
    return runBreakWithBpf(bo);
  }
  auto hook = interruptOnStop(*session);
  if (auto e = syntaxError(*session, bo.parts.exprs)) raise(*e);
  delve::BreakpointSpec spec = captureSpec(bo.location, bo.parts);
  spec.cond = args.get("cond").value_or("");
  auto bp = orRaise(session->createBreakpoint(spec));
  const std::string when = spec.cond.empty() ? "" : ", when " + spec.cond;
  std::fprintf(stderr, "goscope: breakpoint at %s (%s:%lld) in PID %d%s; Ctrl-C to stop\n", bo.location.c_str(),
               bp.file.c_str(), static_cast<long long>(bp.line), bo.pid, when.c_str());

  HitPrinter printer(bo.parts, bo.json);
  HitLoopResult loop = runHitLoop(*session, {bp.id}, bo.maxHits, bo.durationS,
                                  [&](const delve::BreakpointHit& h) { return printer.print(h); });

  // Clear before detaching when we can (stopped); detach clears it otherwise.
  if (session->state() == delve::SessionState::Stopped) (void)session->clearBreakpoint(bp.id);
  auto detached = session->detach();
  std::fprintf(stderr, "goscope: %lld hits in %.2f s (%.1f hits/s)%s\n", loop.hits, loop.activeS,
               loop.activeS > 0 ? loop.hits / loop.activeS : 0.0,
               loop.failed ? "" : ("; " + std::string(describe(loop.end))).c_str());
  // Delve also stops the target at every trap it resumes by itself (a
  // condition that is false): goscope does not see those.
  reportTimings(*session, msSince(t0), spec.cond.empty() ? nullptr : " (plus Delve's own stops to test --cond)");
  if (loop.failed) raise(sessionError(bo.pid, *loop.failed));
  orRaise(std::move(detached));
  return 0;
}

}  // namespace goscope::cli
