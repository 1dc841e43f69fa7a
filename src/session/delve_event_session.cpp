// The Delve event session: break (one breakpoint at FUNC: full Go types,
// expressions, locals, a condition) and trace's Delve plan (one breakpoint
// per matched function, at most kDelveMaxBreakpoints, arguments at the
// entry: chosen when BPF cannot read what was asked, e.g. float arguments in
// XMM registers). Every hit stops the whole process for a round trip to dlv.
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "session/delve_capture.hpp"
#include "session/event_sessions.hpp"
#include "session/event_session.hpp"
#include "session/host_costs.hpp"
#include "session/overhead_bound.hpp"
#include "backend/bpf/stop_watch.hpp"
#include "probe/function_suggestions.hpp"
#include "probe/pattern.hpp"
#include "binary/disasm.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

namespace {

constexpr int kTraceStackFrames = 16;

// A location Delve found nowhere, named as a function: the functions of the
// binary nearest to it, in the hint.
Error withSuggestions(Error e, const GoBinary& bin, const std::string& location) {
  if (e.kind != ErrorKind::NoMatch) return e;
  auto pattern = Pattern::parse(location);
  if (!pattern || !pattern->isLiteral()) return e;
  if (std::string offer = functionSuggestions(bin, {*pattern}); !offer.empty())
    e.hint = e.hint.empty() ? offer : offer + " (" + e.hint + ")";
  return e;
}

Result<std::vector<std::string>> matchingFunctions(const GoBinary& bin, const ProbeRequest& r) {
  auto patterns = patternsOf(r);
  if (!patterns) return patterns.failure();
  std::vector<std::string> names;
  std::vector<bool> matched(patterns->size(), false);
  for (const auto& fn : bin.pclntab().functions()) {
    bool any = false;
    for (size_t i = 0; i < patterns->size(); i++)
      if ((*patterns)[i].matches(fn.name)) matched[i] = any = true;
    if (any) names.push_back(fn.name);
  }
  if (names.empty())
    return fail(ErrorKind::NoMatch, "trace: no function matches " + r.locations.front(),
                suggestionHint(bin, *patterns, "goscope list shows every function"));
  for (size_t i = 0; i < patterns->size() && !r.ignoreMissing; i++)
    if (!matched[i]) {
      const std::string offer = functionSuggestions(bin, {(*patterns)[i]});
      return fail(ErrorKind::NoMatch, "trace: '" + (*patterns)[i].text() + "' matches no function (the other patterns do)",
                  offer.empty() ? "check the spelling (goscope list shows every function), or --ignore-missing to go on without it"
                                : offer + " (or --ignore-missing to go on without it)");
    }
  if (names.size() > kDelveMaxBreakpoints)
    return fail(ErrorKind::Usage,
                "trace: " + std::to_string(names.size()) + " functions match; the Delve path sets at most " +
                    std::to_string(kDelveMaxBreakpoints) + " breakpoints",
                "narrow the pattern, or let BPF trace them: --strategy bpf");
  return names;
}

// A breakpoint at a raw address (`*0x4835c1`) writes an int3 there: inside
// an instruction it corrupts the target (its displacement or immediate
// changes for the whole session, and after it). The same disassembler that
// places the BPF probes checks the address first.
Result<void> checkRawAddress(TracedTarget& target, const std::string& location) {
  char* end = nullptr;
  const uint64_t addr = std::strtoull(location.c_str() + 1, &end, 0);
  if (end == location.c_str() + 1 || *end != '\0')
    return fail(ErrorKind::Usage, "break: " + location + " is not an address (*0x4835c0)");
  auto bias = target.loadBias();
  if (!bias) return bias.failure();
  const uint64_t link = addr - *bias;
  const GoBinary& bin = target.binary();
  const GoFunction* fn = bin.pclntab().functionAt(link);
  if (!fn)
    return fail(ErrorKind::Usage, "break: " + location + " is not in any function of " + target.describe(),
                "goscope list shows every function and its entry");
  auto code = bin.analyze(*fn);
  if (!code) return fail(ErrorKind::Usage, "break: " + location + ": " + fn->name + " cannot be disassembled: " + code.error().message);
  if (!isInstructionBoundary(*code, link))
    return fail(ErrorKind::Usage,
                "break: " + location + " is inside an instruction of " + fn->name +
                    ": a breakpoint there would corrupt the target",
                "give the address of an instruction's first byte (objdump -d), or the function's name");
  return {};
}

// The Delve session's probes as the overhead bound sees them: its hits,
// priced at 0 a hit, and the target's stops since the first hit could
// come, measured. Sampled at most once a second (a window of hits), and
// never acted on but by moving the session (BoundRules::MoveToBpf).
struct DelveHits final : BoundProbes {
  uint64_t hits = 0;
  std::function<double()> stoppedMs;

  bool sample(CostMeter& meter, double nowS, bool force, bool) override {
    if (!force && nowS - meter.lastSampleS() < 1.0) return false;
    const double ms = stoppedMs ? std::max(0.0, stoppedMs()) : 0;
    meter.sample({hits}, nowS, static_cast<uint64_t>(ms * 1e6));
    return true;
  }
  Result<void> sampleEvery(uint32_t, uint32_t) override {
    return fail(ErrorKind::Internal, "a Delve breakpoint is not sampled");
  }
  Result<void> drop(const std::vector<uint32_t>&) override {
    return fail(ErrorKind::Internal, "a Delve breakpoint is not dropped: the session moves to BPF");
  }
  uint64_t calls(uint32_t) const override { return hits; }
};

class DelveEventSession final : public EventSession {
 public:
  DelveEventSession(const ProbeRequest& r, bool mayMove)
      : request_(r), pid_(*r.target.pid), t0_(std::chrono::steady_clock::now()), mayMove_(mayMove) {}

  // True when run() ended because the stops took more than the budget and
  // the session may go on on BPF (startEventSession does that).
  bool wantsToMove() const { return moveAsked_; }

  Result<void> start(TracedTarget& target) {
    // The true stopped time, every hit included (bpf/stopwatch.bpf.c);
    // without BPF privileges goscope's own view, a lower bound, is told.
    if (auto w = bpf::StopWatch::start(pid_)) watch_ = std::move(*w);
    costs_ = hostCosts();
    const GoBinary& bin = target.binary();
    const bool isBreak = request_.action == Action::Break;
    for (const auto& l : request_.locations)
      if (l.starts_with("*"))
        if (auto ok = checkRawAddress(target, l); !ok) return ok;
    std::vector<std::string> locations = request_.locations;
    if (!isBreak) {
      auto names = matchingFunctions(bin, request_);
      if (!names) return names.failure();
      locations = std::move(*names);
    }
    parts_.args = request_.capture.args;
    parts_.exprs = request_.capture.exprs;
    parts_.locals = request_.capture.locals;
    parts_.stack = request_.capture.stack ? (isBreak ? request_.capture.stackFrames : kTraceStackFrames) : 0;
    // break's --max-*; trace's --max-string (its strings, as on BPF).
    parts_.limits = isBreak ? request_.hitLimits : kHitReadLimits;
    if (!isBreak) parts_.limits.maxString = request_.capture.maxString;
    // A breakpoint's expressions are loaded with Delve's own limits: others
    // are evaluated at each hit instead (as sample does).
    const bool ownLimits = !sameLimits(parts_.limits, kHitReadLimits);
    auto session = attachDelve(pid_, {request_.dlvArgs, request_.dlvPath}, &target, isBreak ? "break" : "trace on the Delve path");
    if (!session) return session.failure();
    session_ = std::move(*session);
    if (auto e = syntaxError(*session_, parts_.exprs)) return fail(*e);
    // trace --filter on this path is the breakpoint's condition (Delve
    // evaluates it at each stop: the process still stops for every call).
    std::string cond = request_.capture.cond.value_or("");
    if (request_.filter) {
      auto c = delveCondition(*request_.filter);
      if (!c) return c.failure();
      cond = *c;
      filterCond_ = cond;
    }
    for (const auto& loc : locations) {
      delve::BreakpointSpec spec = captureSpec(loc, parts_);
      if (ownLimits) evalAtHit_ = std::exchange(spec.variables, {});
      spec.cond = cond;
      auto bp = session_->createBreakpoint(spec);
      if (!bp) return fail(withSuggestions(bp.error(), bin, loc));
      ids_.push_back(bp->id);
      if (ids_.size() == 1) {
        firstFile_ = bp->file;
        firstLine_ = bp->line;
      }
    }
    return {};
  }

  Backend path() const override { return Backend::Delve; }

  std::string announcement() const override {
    char line[512];
    if (request_.action == Action::Break) {
      const std::string when = request_.capture.cond ? ", when " + *request_.capture.cond : "";
      std::snprintf(line, sizeof line, "goscope: breakpoint at %s (%s:%lld) in PID %d%s; Ctrl-C to stop",
                    request_.locations.front().c_str(), firstFile_.c_str(), static_cast<long long>(firstLine_), pid_,
                    when.c_str());
    } else {
      std::snprintf(line, sizeof line,
                    "goscope: %zu Delve breakpoint(s) in PID %d%s (arguments at entry; results are not captured on this "
                    "path); Ctrl-C to stop",
                    ids_.size(), pid_, filterCond_.empty() ? "" : (", when " + filterCond_).c_str());
    }
    return line;
  }

  // What the code that hits the breakpoint loses: the stops of the threads
  // at a breakpoint (docs/overhead.md); goscope's own view without the stop
  // watch.
  double stoppedMs() const { return watch_ ? watch_->hitStoppedMs() : session_->timings().stoppedMs; }
  // Some thread stopped, attach and detach included (the stop watch only).
  double processStoppedMs() const { return watch_ ? watch_->stoppedMs() : 0; }
  // Enforced: --max-overhead given, or the path chosen by auto (a forced
  // --strategy delve only warns unless a budget is given too).
  bool enforce() const { return request_.maxOverheadExplicit || request_.strategy != StrategyChoice::Delve; }

  // After each hit: the overhead bound (overhead_bound.hpp) samples the
  // stops over windows of at least a second and, above the budget for a
  // whole window, asks to move to BPF (when it may) or warns once.
  void govern() {
    ++hits_.hits;
    const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - runT0_).count();
    bound_->govern(hits_, at, true, [this](const BoundAction& a) {
      if (a.kind == BoundAction::Kind::Moved) {
        moveAsked_ = true;
        stopAsked_ = true;
      }
      bound(a);
    });
  }

  void stop() override {
    stopAsked_ = true;
    if (session_) session_->interrupt();  // async-signal-safe: it cuts a waiting continue short
  }

  EventTotals run(const std::function<bool(const Call&)>& sink) override {
    StopHookScope hook = interruptOnStop(*session_);
    runT0_ = std::chrono::steady_clock::now();
    const double stoppedBeforeHits = stoppedMs();
    hits_.stoppedMs = [this, stoppedBeforeHits] { return stoppedMs() - stoppedBeforeHits; };
    bound_ = std::make_unique<OverheadBound>(
        std::make_unique<CostMeter>(std::vector<CostMeter::Probe>{{request_.locations.front(), 0}}, costs_,
                                    request_.maxOverheadPct, enforce()),
        delveBoundRules(enforce(), mayMove_));
    const double processStoppedBefore = processStoppedMs();  // the attach
    HitLoopResult loop = runHitLoop(*session_, ids_, request_.maxHits, request_.durationS,
                                    [&](const delve::BreakpointHit& h) {
                                      const bool more = sink(callFromHit(h, parts_, pid_));
                                      govern();
                                      return more;
                                    },
                                    &stopAsked_,
                                    [this](const delve::BreakpointHit& h) { return withExpressions(h); });
    const double stoppedAtHits = stoppedMs() - stoppedBeforeHits;
    const double processStoppedAtEnd = processStoppedMs();
    // Clear before detaching when we can (stopped); detach clears them otherwise.
    if (session_->state() == delve::SessionState::Stopped)
      for (auto id : ids_) (void)session_->clearBreakpoint(id);
    auto detached = session_->detach();
    EventTotals t;
    t.path = Backend::Delve;
    t.calls = loop.hits;
    t.activeS = loop.activeS;
    t.pid = pid_;
    t.target = "PID " + std::to_string(pid_);
    t.end = loop.failed                          ? EventEnd::Failed
            : loop.end == HitLoopEnd::Count      ? EventEnd::HitCount
            : loop.end == HitLoopEnd::Duration   ? EventEnd::Duration
            : loop.end == HitLoopEnd::Stopped    ? EventEnd::OutputClosed
                                                 : EventEnd::Signal;
    if (loop.failed) t.failed = sessionError(pid_, *loop.failed);
    // The target's exit (not an exec) is how the session ended, not a
    // failure of goscope's: `failed` keeps how it is said, for callers that
    // make it an error (goscope --strict).
    if (t.failed && t.failed->kind == ErrorKind::TargetGone &&
        t.failed->message.find("replaced its program") == std::string::npos)
      t.end = EventEnd::TargetExited;
    if (!detached) t.detachFailed = detached.error();
    auto times = session_->timings();
    t.costs = {pid_, times.stoppedMs, times.attachMs, times.detachMs, msSince(t0_)};
    if (moveAsked_ && !loop.failed) t.end = EventEnd::OverBudget;
    // What it cost: the stops, measured by the kernel when it could be.
    t.cost.elapsedS = msSince(t0_) / 1000;
    t.cost.stoppedMeasured = watch_ != nullptr;
    // The attach's stop, the hits', the detach's.
    t.cost.stoppedMs = watch_ ? processStoppedBefore + stoppedAtHits + (processStoppedMs() - processStoppedAtEnd)
                              : stoppedMs();
    if (watch_) t.costs.stoppedMs = t.cost.stoppedMs;
    // Without a hit, what the watch saw between the attach and the detach
    // was the stop that ends the session, not a hit's: nothing at hits.
    t.cost.stoppedAtHitsMs = loop.hits > 0 ? stoppedAtHits : 0;
    t.cost.peakRate = bound_->meter().peakRate();
    t.cost.peakFunction = ids_.size() == 1 ? request_.locations.front() : std::string();
    t.cost.budgetPct = request_.maxOverheadPct;
    t.cost.enforced = enforce();
    t.cost.figures = watch_ ? "stops measured by the kernel's scheduler events" : "stops as goscope saw them (a lower bound)";
    t.cost.actions = bound_->meter().totals(t.cost.elapsedS).actions;
    // What a hit costs here, for later plans: the stops while hits came
    // (attach and detach are paid once, not per hit).
    if (watch_ && loop.hits >= 20) recordDelveStopCost(static_cast<uint64_t>(loop.hits), stoppedAtHits);
    return t;
  }

 private:
  ProbeRequest request_;
  pid_t pid_;
  std::chrono::steady_clock::time_point t0_;
  CaptureParts parts_;
  std::vector<std::string> evalAtHit_;  // expressions evaluated at each hit with parts_.limits

  // The hit with evalAtHit_'s values, evaluated in its goroutine while the
  // target is stopped there; one that fails is shown unreadable, with why.
  delve::BreakpointHit withExpressions(const delve::BreakpointHit& h) const {
    if (evalAtHit_.empty()) return h;
    delve::BreakpointHit out = h;
    for (const auto& expr : evalAtHit_) {
      auto v = session_->eval(expr, loadConfigOf(parts_.limits), h.goroutineId);
      rpc::Variable value;
      if (v) value = std::move(*v);
      else value.unreadable = v.error().message;
      value.name = expr;
      out.captured.variables.push_back(std::move(value));
    }
    return out;
  }
  std::unique_ptr<delve::DelveSession> session_;
  std::vector<int64_t> ids_;
  std::string firstFile_;
  int64_t firstLine_ = 0;
  std::string filterCond_;  // trace --filter as the breakpoints' condition
  std::atomic<bool> stopAsked_{false};
  bool mayMove_ = false;
  bool moveAsked_ = false;
  std::unique_ptr<bpf::StopWatch> watch_;
  HostCosts costs_;
  std::chrono::steady_clock::time_point runT0_;
  DelveHits hits_;
  std::unique_ptr<OverheadBound> bound_;
};

}  // namespace

bool wantsToMove(const EventSession& s) {
  auto* d = dynamic_cast<const DelveEventSession*>(&s);
  return d && d->wantsToMove();
}

Result<std::unique_ptr<EventSession>> startDelveEvents(const ProbeRequest& r, TracedTarget& target, bool mayMove) {
  if (!r.target.pid) return fail(ErrorKind::Usage, std::string(actionName(r.action)) + ": the Delve path needs -p PID");
  auto s = std::make_unique<DelveEventSession>(r, mayMove);
  if (auto ok = s->start(target); !ok) return ok.failure();
  return std::unique_ptr<EventSession>(std::move(s));
}

}  // namespace goscope::session
