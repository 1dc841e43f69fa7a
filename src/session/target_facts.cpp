// The facts the strategy layer weighs, found out
// as cheaply as each fact allows — section headers for DWARF, $PATH and
// the dlvs found and their versions for Delve (only when Delve may serve), capget for
// privileges, for read only the DWARF of the variables named — and the hit
// rate, the one fact that costs a probe, only when it decides between the
// paths.
#include <unistd.h>

#include <cstdio>

#include <spdlog/spdlog.h>

#include "session/target_facts.hpp"
#include "session/host_costs.hpp"
#include "session/prepared_engine.hpp"
#include "backend/bpf/privileges.hpp"
#include "backend/delve/delve_finder.hpp"
#include "probe/abi_layout.hpp"
#include "probe/location_kind.hpp"
#include "probe/pattern.hpp"
#include "backend/memory/direct_read.hpp"
#include "backend/memory/read_selector.hpp"
#include "process/ptrace_privileges.hpp"
#include "process/run_state.hpp"
#include "binary/unknown_global.hpp"

namespace goscope::session {


namespace {

bool isPerHit(Action a) { return a == Action::Trace || a == Action::Break; }

bool needsDelveFacts(Action a) {
  return a == Action::Read || a == Action::Sample || a == Action::Set || isPerHit(a);
}

bool anyFunctionMatches(const GoBinary& bin, const std::vector<Pattern>& patterns) {
  for (const auto& p : patterns)
    for (const auto& fn : bin.pclntab().functions())
      if (p.matches(fn.name)) return true;
  return false;
}

// How many functions the locations match, and does any of them take or
// return a float (which lives in XMM registers, out of BPF's reach)? Only
// the first 256 matches are laid out.
struct MatchFacts {
  size_t functions = 0;
  bool floats = false;
  Placement entry = Placement::Emulated;  // the dearest entry placement among them
};

MatchFacts matchFacts(const GoBinary& bin, const std::vector<Pattern>& patterns, bool wantFloats) {
  MatchFacts m;
  const DwarfInfo* d = wantFloats ? bin.dwarf() : nullptr;
  for (const auto& fn : bin.pclntab().functions()) {
    bool match = false;
    for (const auto& p : patterns) match = match || p.matches(fn.name);
    if (!match) continue;
    if (++m.functions > 256) continue;
    if (auto code = bin.analyze(fn); code && code->probe.kind == ProbeSite::Kind::SteppedEntry) m.entry = Placement::Stepped;
    if (!d || m.floats) continue;
    const DwarfFunction* df = d->functionAt(fn.entry);
    if (!df) continue;
    auto layout = layoutFunction(*d, *df, fn.args);
    if (!layout) continue;
    for (const auto& v : *layout)
      for (const auto& part : v.parts) m.floats = m.floats || part.kind == ValuePart::FloatReg;
  }
  return m;
}

}  // namespace

namespace {

// Everything but the hit rate: the facts that cost no probe.
Result<TargetFacts> staticFacts(const ProbeRequest& r, const GoBinary& bin, std::optional<pid_t> pid) {
  TargetFacts f;
  // DWARF from the executable or a separate debug file (GoBinary::attachDebugInfo).
  f.hasDwarf = bin.hasDwarf();
  if (f.hasDwarf && !bin.hasEmbeddedDwarf()) f.separateDebugFile = bin.debugInfoOrigin().path;
  if (const BuildInfo* bi = bin.buildInfo()) f.goVersion = bi->goVersion;
  f.bpfPrivileges = static_cast<bool>(bpf::checkPrivileges());
  // What decides a ptrace attach (Delve; direct reads need the same access):
  // capabilities, Yama, the target's user, and another tracer holding it.
  if (pid) {
    if (auto facts = readPtraceFacts(*pid)) {
      if (auto ok = judgePtrace(*pid, *facts); !ok) {
        if (ok.error().kind == ErrorKind::Permission) {
          f.ptracePrivileges = false;
          f.ptraceRefusal = ok.error().message;
        } else {
          f.delveBlockedBy = ok.error().message;
          f.delveBlockedHint = ok.error().hint;
        }
      }
    }
    if (runStateOf(*pid) == RunState::Stopped) f.stoppedPid = *pid;
  } else {
    f.ptracePrivileges = ::geteuid() == 0;
  }
  f.runningProcess = pid.has_value();
  f.dlvInstalled = delve::anyDelve(r.dlvPath);  // $PATH and the toolchain cache looked at, no process
  bool directReadServes = false;
  if (r.action == Action::Read || (r.action == Action::Sample && r.locations.empty())) {
    // Only the DWARF these variables need, once for all of them: the
    // package variables the expressions may name (`main.cfg.Name` may be
    // `main.cfg`'s field or a variable of that name).
    if (f.hasDwarf) {
      std::vector<std::string> names;
      for (const auto& e : r.capture.exprs)
        if (auto sel = parseReadSelector(e))
          for (auto& n : variableCandidates(sel->path)) names.push_back(std::move(n));
      bin.dwarfGlobals(names);
    }
    // A package variable the binary shows does not exist is refused here,
    // before Delve is started or the target stopped.
    // Each expression resolved once: whether it exists, and whether memory
    // answers it (the first that memory does not answer is the reason).
    for (const auto& e : r.capture.exprs) {
      auto unknown = unknownGlobal(bin, e);
      DirectReadCheck check;
      if (!unknown) {
        check = checkDirectRead(bin, e);
        unknown = check.unknownField;
      }
      if (unknown)
        return fail(unknown->kind, std::string(r.action == Action::Read ? "read: " : "sample: ") + unknown->message,
                    unknown->hint);
      if (f.hasDwarf && f.directReadRefusal.empty()) f.directReadRefusal = check.refusal;
    }
    f.readsArePlainVariables = f.hasDwarf && !r.capture.exprs.empty() && f.directReadRefusal.empty();
    directReadServes = f.readsArePlainVariables && f.ptracePrivileges && r.strategy == StrategyChoice::Auto;
  }
  // `dlv version` is a process (~10-100 ms): asked only when Delve may be
  // the plan, and only of the dlvs looked at before one covers the target.
  // A direct read leaves it unasked (Delve stays its fallback: a Go release
  // outside Delve's window is then dlv's own error).
  if (directReadServes) spdlog::debug("plan facts: a direct read serves: dlv's version not asked, no process started");
  if (needsDelveFacts(r.action) && !directReadServes && f.dlvInstalled) {
    delve::DelveChoice choice = delve::chooseDelve(r.dlvPath, f.goVersion);
    bool overridden = false;
    for (const auto& a : r.dlvArgs) overridden = overridden || a == "--check-go-version=false";
    if (choice.chosen && choice.chosen->window) {
      f.delveAcceptsGoVersion = overridden || choice.covers;
      // Nothing found covers it: every window looked at, not just the first.
      f.delveWindow = choice.covers || choice.windows.empty() ? choice.chosen->window->describe() : choice.windows;
    }
    f.delveChoice = choice.why;
    if (!choice.covers) f.delveFetchHint = choice.hint;
  }
  if (isPerHit(r.action)) {
    // Locations that are not all patterns are Delve's (break only).
    auto parsed = patternsOf(r);
    const std::vector<Pattern> patterns = parsed ? std::move(*parsed) : std::vector<Pattern>{};
    // break takes Delve's locations too (file.go:12, *0x4567); trace takes
    // patterns only, where `*` is a glob.
    if (r.action == Action::Break)
      for (const auto& l : r.locations) f.locationsAreFunctions = f.locationsAreFunctions && namesFunction(l);
    // break takes Delve's locations too (a short name like `doWork`): one
    // that names no function exactly is Delve's to resolve or refuse.
    if (r.action == Action::Break && f.locationsAreFunctions && !anyFunctionMatches(bin, patterns))
      f.locationsAreFunctions = false;
    if (f.locationsAreFunctions) {
      MatchFacts m = matchFacts(bin, patterns, (r.capture.args || r.capture.results) && f.hasDwarf);
      f.matchedFunctions = m.functions;
      f.floatArguments = m.floats;
      f.entryPlacement = m.entry;
    }
  }
  // The figures every probing session prices its hits with (count's and
  // latency's budget as much as trace's): the facts show the same ones.
  if (isPerHit(r.action) || r.action == Action::Count || r.action == Action::Latency) f.costs = hostCosts();
  return f;
}

}  // namespace

Result<Planned> factsAndPlan(const ProbeRequest& r, const GoBinary& bin, std::optional<pid_t> pid,
                             std::shared_ptr<PreparedPath>* keep) {
  auto f = staticFacts(r, bin, pid);
  if (!f) return f.failure();
  Planned out{std::move(*f)};
  out.plan = planRequest(r, out.facts);
  const bool rateDecides = out.plan && out.plan->needsRate;
  if (isPerHit(r.action) && rateDecides && pid && !r.expectedRatePerS && out.facts.bpfPrivileges) {
    auto patterns = patternsOf(r);
    if (!patterns) return out;
    std::shared_ptr<PreparedPath> prepared;
    if (auto rate = measureHitRateKeeping(bin, *pid, *patterns, r.rateWindowS, out.plan->delveRateLimitPerS, &r,
                                          &prepared)) {
      out.facts.measuredRatePerS = *rate;
      out.plan = planRequest(r, out.facts);
    }
    // The probe's engine, its links still attached, goes with a BPF plan,
    // for its session to take over (prepared_engine.hpp); any other plan
    // detaches and releases it here, before Delve attaches.
    if (keep && out.plan && out.plan->backend == Backend::Bpf) *keep = std::move(prepared);
    if (prepared && prepared->engine) prepared->engine->detachAll();
    prepared.reset();
  }
  if (out.plan) out.plan->ratePerS = out.facts.measuredRatePerS ? out.facts.measuredRatePerS : r.expectedRatePerS;
  return out;
}

}  // namespace goscope::session
