// session::AggregateSession: call counts kept in the kernel (a per-CPU array;
// nothing crosses to user space per hit), with an optional read of a global
// on each hit of the first function — the talks' counter demo. `goscope
// count` is this class plus printing.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "session/bpf_session.hpp"
#include "session/engine_ahead.hpp"
#include "session/overhead_bound.hpp"
#include "session/aggregate_session.hpp"
#include "session/bpf_access.hpp"
#include "session/host_costs.hpp"
#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/function_capture.hpp"
#include "backend/bpf/function_selection.hpp"
#include "session/event_sessions.hpp"
#include "binary/stack_symbolizer.hpp"
#include "probe/pattern.hpp"
#include "binary/go_runtime_facts.hpp"
#include "util/plural.hpp"
#include "util/progress.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

std::string attachedLine(const Selection& sel, const bpf::AttachStats& stats, const std::string& target) {
  char line[512];
  std::string skipped = sel.skippedUnsafe ? ", " + std::to_string(sel.skippedUnsafe) + " unsafe to probe left out" : "";
  if (sel.skippedReturnsUnknown)
    skipped += ", " + std::to_string(sel.skippedReturnsUnknown) + " left out whose returns are unknown (" +
               sel.returnsUnknownExample + ")";
  if (sel.inlinedLeftOut)
    skipped += ", " + std::to_string(sel.inlinedLeftOut) + " inlined bodies left out (" + sel.inlinedLeftOutExample + ")";
  std::snprintf(line, sizeof line, "goscope: %s, %s attached to %s in %.1f ms (%s), %.0f ms after goscope started",
                countOf(sel.functions.size(), "function").c_str(), countOf(stats.points, "probe").c_str(), target.c_str(), stats.attachMs,
                stats.uprobeMulti ? "uprobe_multi" : "perf-event uprobes", secondsSinceProcessStart() * 1000);
  return line + skipped + "; Ctrl-C to stop";
}

std::string accessNotice(const bpf::Engine& engine, const TracedTarget& target) {
  if (!target.isBinaryWide()) return "";
  return bpf::accessNotice(engine.accessScope());
}

struct AggregateSession::Impl {
  explicit Impl(TracedTarget t) : target_(std::move(t)) {}
  TracedTarget target_;
  Selection selection_;
  std::unique_ptr<bpf::Engine> engine_;
  bpf::AttachStats attach_;
  LoopOptions loop_;
  std::optional<std::string> readVariable_;
  bool latency_ = false;
  bool stacks_ = false;  // --folded/--svg: the kernel's stack maps are drained as they fill
  double startS_ = 0;
  bool detached_ = false;
  // The live accounting and the overhead bound (overhead_bound.hpp).
  std::unique_ptr<OverheadBound> bound_;
  BoundCallback onBound_;
  double endS_ = 0;  // when the probes came off
  std::optional<double> detachMs_;  // how long the detach took, once done

  uint64_t lostStacks_ = 0;
  uint64_t cutStacks_ = 0;
  std::optional<FoldedNamer> namer_;  // the names of the stacks' pcs, kept from one reading to the next
  uint64_t stackHits_ = 0;
  uint64_t hiddenCalls_ = 0;  // read at detach: the engine goes with it
  bool filtered_ = false;     // --filter given
  uint64_t filteredOut_ = 0;  // read at detach, as hiddenCalls_
  void govern(bool act = true);
  // The counters now (mu_ held).
  Result<CountSnapshot> read() const;
  // The reading taken when run() ended: what snapshot() returns from then on.
  std::optional<CountSnapshot> final_;
  // snapshot() may be called from another thread while run() runs (the
  // Prometheus exporter's server does): this guards what the loop changes
  // (dropped probes, the meter) and the engine's life. Recursive because
  // govern() calls onBound_, which may take a snapshot.
  mutable std::recursive_mutex mu_;
};

// The bound's rules for count and latency (aggregateBoundRules): samples
// the counts (at most every 250 ms) into the meter; when the budget has been
// exceeded for a second, drops the dearest probes (--max-overhead) or warns
// once.
void AggregateSession::Impl::govern(bool act) {
  if (!bound_ || detached_) return;
  EngineProbes probes(*engine_);
  bound_->govern(probes, monotonicSeconds() - startS_, act, onBound_);
}

AggregateSession::AggregateSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

const TracedTarget& AggregateSession::target() const { return impl_->target_; }
size_t AggregateSession::functionCount() const { return impl_->selection_.functions.size(); }
std::optional<std::string> AggregateSession::readVariable() const { return impl_->readVariable_; }

Result<std::unique_ptr<AggregateSession>> AggregateSession::start(const ProbeRequest& r) {
  auto target = TracedTarget::open(r.target);
  if (!target) {
    Error e = target.error();
    if (e.kind == ErrorKind::Usage) e.message = "count: " + e.message;
    return fail(e);
  }
  return start(std::move(*target), r);
}

Result<std::unique_ptr<AggregateSession>> AggregateSession::start(TracedTarget target, const ProbeRequest& r,
                                                                   const Plan& plan) {
  if (plan.backend != Backend::Bpf)
    return fail(ErrorKind::Internal, std::string(actionName(r.action)) + ": planned onto " + backendName(plan.backend) +
                                         ", but counts, latency and stacks are BPF's alone");
  return start(std::move(target), r);
}

Result<std::unique_ptr<AggregateSession>> AggregateSession::start(TracedTarget target, const ProbeRequest& r) {
  auto parsed = patternsOf(r);
  if (!parsed) return parsed.failure();
  const std::vector<Pattern>& patterns = *parsed;
  const std::string sub = actionName(r.action);
  const bool latency = r.action == Action::Latency;
  if (patterns.empty()) return fail(ErrorKind::Usage, sub + ": name at least one function pattern, e.g. 'main.*'");
  if (latency)
    if (std::string why = stackAbiRefusal(target.binary()); !why.empty())
      return fail(ErrorKind::BadTarget, "latency: " + target.describe() + " was " + why,
                  "goscope count works on it (counts need neither)");
  std::unique_ptr<AggregateSession> session(new AggregateSession(std::make_unique<Impl>(std::move(target))));
  Impl* s = session->impl_.get();
  s->loop_ = LoopOptions{r.intervalS, r.durationS};
  const GoBinary& bin = s->target_.binary();
  // The maps' sizes: one probe id per function (a binary with more functions
  // than the default, kubectl 1.33's 79,884, must not fail with "probe id
  // 65536 is not below maxProbes"), a latency slot per function, a filter
  // per function.
  const uint32_t goid = goidOffset(bin);
  auto engineOptions = [&](size_t probes) {
    bpf::EngineOptions eo{.goidOffset = goid};
    const auto n = static_cast<uint32_t>(std::min<size_t>(probes, 1u << 24));
    eo.maxProbes = std::max(eo.maxProbes, n);
    eo.measureProgramTime = true;
    if (r.capture.stack) eo.stackTraceEntries = bpf::EngineOptions::kFoldedStacks;
    if (latency) eo.maxLatencyProbes = std::max(eo.maxLatencyProbes, n);
    if (r.filter) eo.maxFilters = std::max(eo.maxFilters, n);
    return eo;
  };
  // Loaded beside the analysis (engine_ahead.hpp), sized before the
  // selection from the functions the patterns name.
  EngineAhead ahead(engineOptions(probesGuess(namedFunctions(bin, patterns))));
  auto sel = selectFunctions(bin, patterns, {.returns = latency, .plainEntry = r.plainEntry, .ignoreMissing = r.ignoreMissing,
                                             .inlined = !latency,
                                             // a filter reads arguments: an inlined body has none in registers
                                             .inlinedRefusal = r.filter ? kFilterInlined : "",
                                             // latency too: each call ends at the instruction after it; a
                                             // stack lacks the callee's frame at a call site, and a filter
                                             // keeps the entry (count's rule, not yet tested at call sites)
                                             .callSites = !r.capture.stack && !r.filter},
                             s->target_.describe());
  if (!sel) return fail(sel.error());
  s->selection_ = std::move(*sel);

  std::optional<GlobalVariable> read;
  if (r.readVariable) {
    auto v = findGlobal(bin, *r.readVariable);
    if (!v) return fail(v.error());
    if (v->size == 0 || v->size > 8)
      return fail(ErrorKind::Usage, "--read " + *r.readVariable + ": only variables of 1 to 8 bytes can be read per hit (it has " +
                                        std::to_string(v->size) + ")");
    read = *v;
    s->readVariable_ = r.readVariable;
  }
  s->stacks_ = r.capture.stack;

  bpf::EngineOptions eo = engineOptions(s->selection_.functions.size());
  // --filter, bound to each function's arguments (DWARF or a signature)
  // before anything is loaded: a name one of them lacks is said now.
  std::vector<std::vector<BoundFilterTerm>> filters(s->selection_.functions.size());
  if (r.filter) {
    if (latency) return fail(ErrorKind::Usage, "latency: --filter is not supported", "count and trace take --filter");
    RuntimeTypeGraph graph(bin);  // indexed once for every function
    for (size_t i = 0; i < s->selection_.functions.size(); i++) {
      const GoFunction& fn = *s->selection_.functions[i].fn;
      auto b = filterFor(traceFor(bin, fn, r.signatures, {}, &graph), *r.filter, fn.name);
      if (!b) return fail(b.error());
      filters[i] = std::move(*b);
    }
    s->filtered_ = true;
  }
  s->latency_ = latency;
  // Assembled in one place (bpf_session.hpp): the programs loaded beside
  // the analysis, one configuration a function, the attach.
  BpfSessionSpec spec;
  spec.options = eo;
  spec.ahead = &ahead;
  for (size_t i = 0; i < s->selection_.functions.size(); i++) {
    // With a filter the count is of the matching calls only (the kernel
    // tests it before counting).
    bpf::ProbeConfig cfg{.count = true, .latency = latency, .stackCounts = r.capture.stack};
    cfg.filter = filters[i];
    cfg.countMatching = true;
    spec.probes.push_back({s->selection_.functions[i].probeId, std::move(cfg)});
  }
  // --read rides on probe 0: its configuration as built above (filter,
  // stacks) plus the read, never a bare count that would drop the filter.
  bpf::ProbeConfig probe0{.count = true};
  for (const auto& p : spec.probes)
    if (p.id == 0) probe0 = p.config;
  auto readConfig = [&]() -> Result<bpf::ProbeConfig> {
    auto bias = s->target_.loadBias();
    if (!bias) return fail(bias.error());
    bpf::ProbeConfig cfg = probe0;
    cfg.readGlobal = bpf::GlobalRead{read->address + *bias, static_cast<uint8_t>(read->size)};
    return cfg;
  };
  // A PIE started by -c has no load bias until it runs: configure the read
  // after release (reconfiguring zeroes that probe's count of the first
  // moments); everything else knows its addresses now.
  const bool readAfterStart = read && s->target_.isLaunched() && bin.elf().isPie();
  if (read && !readAfterStart) {
    auto c = readConfig();
    if (!c) return fail(c.error());
    bool replaced = false;
    for (auto& p : spec.probes)
      if (p.id == 0) {
        p.config = *c;
        replaced = true;
      }
    if (!replaced) spec.probes.push_back({0, std::move(*c)});
  }
  // Handed over: the engine keeps them, and a copy here is 5 MB of buf's
  // peak RSS.
  spec.points = std::move(s->selection_.points);
  s->selection_.points.clear();
  spec.path = s->target_.attachPath();
  spec.pidFilter = s->target_.pidFilter();
  spec.checkIdentity = [&] { return s->target_.checkIdentity(); };
  spec.reportStartup = true;
  auto assembled = assembleBpf(std::move(spec));
  if (!assembled) return fail(assembled.error());
  s->engine_ = std::move(assembled->engine);
  s->attach_ = std::move(assembled->attach);
  s->startS_ = assembled->onS;
  // The overhead bound (overhead_bound.hpp), priced before the release.
  s->bound_ = std::make_unique<OverheadBound>(meterFor(s->selection_.functions, latency, r, s->target_.pidFilter()),
                                              aggregateBoundRules(r.maxOverheadExplicit, s->filtered_));
  if (auto rel = s->target_.release(); !rel) return fail(rel.error());
  if (readAfterStart) {
    auto c = readConfig();
    if (!c) return fail(c.error());
    if (auto done = s->engine_->configureProbe(0, *c); !done) return fail(done.error());
  }
  // Stacks are symbolized at the end, when a program started by -c may have
  // exited and its memory map with it: a PIE's load bias is taken (and kept
  // by the target) now, while it runs. Without it the folded stacks of a
  // PIE were bare addresses.
  if (r.capture.stack && s->target_.isLaunched() && bin.elf().isPie()) (void)s->target_.loadBias();
  if (s->target_.isLaunched()) s->startS_ = monotonicSeconds();
  return session;
}

AggregateSession::~AggregateSession() { detach(); }

std::string AggregateSession::announcement() const {
  return attachedLine(impl_->selection_, impl_->attach_, impl_->target_.describe());
}

std::string AggregateSession::accessNotice() const {
  return impl_->engine_ ? session::accessNotice(*impl_->engine_, impl_->target_) : "";
}

uint64_t AggregateSession::hiddenCalls() const {
  std::lock_guard lock(impl_->mu_);
  if (impl_->detached_ || !impl_->engine_) return impl_->hiddenCalls_;
  return impl_->engine_->stats().foreignCalls;
}

Result<CountSnapshot> AggregateSession::snapshot() const {
  std::lock_guard lock(impl_->mu_);
  if (impl_->final_) return *impl_->final_;
  return impl_->read();
}

Result<CountSnapshot> AggregateSession::Impl::read() const {
  if (detached_) return fail(ErrorKind::Internal, "count session already detached");
  auto counts = engine_->counts();
  if (!counts) return fail(counts.error());
  CountSnapshot snap;
  snap.elapsedS = monotonicSeconds() - startS_;
  // One buffer of the final size: grown by doubling, the old and new
  // buffers of 66,875 rows (buf '*') were the whole run's peak RSS at exit.
  snap.functions.reserve(selection_.functions.size());
  for (const auto& f : selection_.functions) {
    FunctionCount fc{f.fn->name, f.probeId < counts->size() ? (*counts)[f.probeId] : 0, std::nullopt, 0, 0, std::nullopt};
    if (bound_)
      if (auto at = bound_->droppedAt(f.probeId)) {
        fc.droppedAtS = at;
        fc.count = bound_->droppedCount(f.probeId);
      }
    if (latency_) {
      if (auto l = engine_->latency(f.probeId)) fc.latency = std::move(*l);
      if (bound_) {
        fc.probeCostNs = bound_->meter().perCallNs(f.probeId);
        fc.probeCostLowNs = bound_->meter().perCallLowNs(f.probeId);
      }
    }
    snap.functions.push_back(std::move(fc));
  }
  if (bound_) {
    snap.costFigures = bound_->meter().costs().source;
    snap.costSoFar = bound_->meter().totals(bound_->meter().lastSampleS());
  }
  if (readVariable_)
    if (auto g = engine_->globalValue(0); g && g->tsNs != 0) snap.readValue = static_cast<int64_t>(g->value);
  return snap;
}

Result<std::map<std::string, uint64_t>> AggregateSession::foldedStacks() {
  std::lock_guard lock(impl_->mu_);
  // After detach() too: the maps stay with the engine, and the session's
  // last reading is best taken with the probes off (it takes as long as
  // the stacks are many: seconds for a type checker's hundred thousand).
  if (!impl_->engine_) return fail(ErrorKind::Internal, "count session has no engine");
  const double t0 = monotonicSeconds();
  auto counts = impl_->engine_->stackCounts();
  if (!counts) return counts.failure();
  auto bias = impl_->target_.isBinaryWide() ? Result<uint64_t>(uint64_t{0}) : impl_->target_.loadBias();
  std::map<std::string, uint64_t> lines;
  impl_->lostStacks_ = 0;
  impl_->cutStacks_ = 0;
  impl_->stackHits_ = 0;
  // The probed function of each probe id, for the [lost] lines.
  std::unordered_map<uint32_t, const std::string*> probed;
  for (const auto& f : impl_->selection_.functions) probed.emplace(f.probeId, &f.fn->name);
  for (const auto& sc : *counts) {
    // An interval's reading, while the probes are on, gives way to the
    // session's end (a stop signal, -d's end): the detach must not wait
    // for it, and the reading after the detach covers what it would have.
    if (endPending()) return fail(ErrorKind::Interrupted, "stacks not read: the session's end is due");
    impl_->stackHits_ += sc.count;
    // A stack that was not recorded is shown under [lost] with the probed
    // function alone: its direct caller alone would make a line that holds
    // neither the function nor its ancestors (docs/kernel.md, "Stacks"),
    // and leaving it out would leave a flame graph of the stacks that were
    // recorded, biased towards them.
    if (sc.frames.empty()) {
      impl_->lostStacks_ += sc.count;
      auto it = probed.find(sc.probeId);
      lines[it == probed.end() ? std::string(kLostRoot) : std::string(kLostRoot) + ";" + *it->second] += sc.count;
      continue;
    }
    // A stack cut at the kernel's depth starts at "[cut]", not at a frame
    // that would pass for the root (a flame graph would misplace it).
    if (!impl_->namer_) impl_->namer_.emplace(impl_->target_.binary().pclntab(), bias ? *bias : 0);
    std::string line = impl_->namer_->line(sc.frames);
    if (sc.cut) {
      line = std::string(kCutRoot) + ";" + line;
      impl_->cutStacks_ += sc.count;
    }
    lines[line] += sc.count;
  }
  if (const uint64_t uncounted = impl_->engine_->stats().stacksUncounted) {
    impl_->lostStacks_ += uncounted;
    impl_->stackHits_ += uncounted;
    lines[kLostRoot] += uncounted;
  }
  spdlog::debug("stacks: {} lines read and named in {:.1f} ms, the probes {}", lines.size(),
                (monotonicSeconds() - t0) * 1000, impl_->detached_ ? "off" : "on");
  return lines;
}

EndReason AggregateSession::run(const std::function<void(const CountSnapshot&)>& onInterval) {
  Impl& m = *impl_;
  LoopOptions loop = m.loop_;
  loop.startS = m.startS_;
  // While the probes are on, a write to a stdout nobody reads gives way to
  // the session's end (util/stop_signals.hpp, endPending); they are off at
  // detach().
  setProbesOn(loop.durationS > 0 ? m.startS_ + loop.durationS : 0);
  auto report = [&](CountSnapshot snap, const IntervalDue& due) {
    snap.intervalLateS = due.lateS;
    snap.intervalsSkipped = due.skipped;
    snap.intervalOverdueS = due.overdueS;
    snap.intervalOwnS = due.ownS;
    if (onInterval) onInterval(snap);
  };
  LoopEnd end = runSessionLoop(
      m.target_, loop,
      [&](double untilS) {
        sleepUntil(untilS);
        std::lock_guard lock(m.mu_);
        m.govern();
        // Before the stack maps fill (the stacks seen first would keep them,
        // the rest go to [lost]): their content moves to the engine.
        if (m.stacks_ && !m.detached_)
          if (auto d = m.engine_->drainStacks(); !d) spdlog::debug("stacks: {}", d.error().message);
      },
      [&](const IntervalDue& due) {
        if (auto s = snapshot()) report(std::move(*s), due);
      });
  // The counters are read the moment the loop sees its end, before anything
  // is printed and before the detach (an RCU grace period per link: long on
  // a loaded machine): -d N reports N seconds of calls. snapshot() gives this reading
  // from now on; the last interval (due at -d's end) is the same reading.
  {
    std::lock_guard lock(m.mu_);
    if (auto s = m.read()) {
      s->endLateS = end.lateS;
      s->endOwnS = end.ownS;
      // The reading is also the last interval's (due at -d's end): a caller
      // whose report of it comes from snapshot() (trace --folded, after the
      // detach) says what it covers as the report below would.
      if (end.lastInterval) {
        s->intervalLateS = end.lastInterval->lateS;
        s->intervalsSkipped = end.lastInterval->skipped;
        s->intervalOverdueS = end.lastInterval->overdueS;
        s->intervalOwnS = end.lastInterval->ownS;
      }
      m.final_ = std::move(*s);
    }
  }
  setSessionEnding();
  if (end.lastInterval && m.final_) report(*m.final_, *end.lastInterval);
  // The holder of the links died (it asked the loop to stop): say so, not "interrupted".
  if (m.engine_ && m.engine_->linksLost()) return EndReason::ProbesLost;
  return end.why;
}

void AggregateSession::stop() { requestStop(); }

uint64_t AggregateSession::lostStacks() const { return impl_->lostStacks_; }
uint64_t AggregateSession::cutStacks() const { return impl_->cutStacks_; }
uint64_t AggregateSession::stackHits() const { return impl_->stackHits_; }

void AggregateSession::onBound(BoundCallback callback) { impl_->onBound_ = std::move(callback); }

SessionCost AggregateSession::cost() const {
  std::lock_guard lock(impl_->mu_);
  if (!impl_->bound_) return {};
  const double elapsed = (impl_->detached_ ? impl_->endS_ : monotonicSeconds() - impl_->startS_);
  SessionCost c = impl_->bound_->meter().totals(elapsed);
  c.hiddenCalls = hiddenCalls();
  c.detachMs = impl_->detachMs_;
  if (impl_->filtered_)
    c.filteredOut = impl_->detached_ || !impl_->engine_ ? impl_->filteredOut_ : impl_->engine_->stats().filteredOut;
  return c;
}

Detached AggregateSession::detach() {
  if (!impl_) return {};
  std::lock_guard lock(impl_->mu_);
  if (impl_->detached_ || !impl_->engine_) return {};
  // The last counts into the meter before they go.
  impl_->govern(false);
  impl_->endS_ = monotonicSeconds() - impl_->startS_;
  auto d = impl_->engine_->detachAll();
  impl_->hiddenCalls_ = impl_->engine_->stats().foreignCalls;  // every probe is off: final
  impl_->filteredOut_ = impl_->engine_->stats().filteredOut;
  impl_->detached_ = true;
  impl_->detachMs_ = d.detachMs;
  setProbesOff();
  spdlog::debug("session: probes off, {} points detached in {:.1f} ms", d.points, d.detachMs);
  return {d.points, d.detachMs};
}

}  // namespace goscope::session
