// The BPF event session: trace (entry and every RET probed; a call is
// delivered at its return, with arguments, results and duration) and
// break's BPF plan (entry probes only; delivered at the entry). The kernel
// copies registers and the few memory blocks each value needs (a capture
// plan); decoding into goscope values happens here.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <unordered_map>

#include "session/bpf_session.hpp"
#include "session/engine_ahead.hpp"
#include "session/overhead_bound.hpp"
#include "session/event_sessions.hpp"
#include "session/prepared_engine.hpp"
#include "session/bpf_access.hpp"
#include "session/event_session.hpp"
#include "session/host_costs.hpp"
#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/ring_size.hpp"
#include "binary/stack_symbolizer.hpp"
#include "backend/bpf/value_decode.hpp"
#include "backend/bpf/function_capture.hpp"
#include "probe/argument_sources.hpp"
#include "probe/pattern.hpp"
#include "probe/type_names.hpp"
#include "backend/bpf/function_selection.hpp"
#include "binary/go_runtime_facts.hpp"
#include "session/session_loop.hpp"
#include "process/traced_target.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

namespace {

// Tracing prints a line per call: beyond this many functions the output is
// no longer something a person reads (count and latency are made for that).
constexpr size_t kMaxTracedFunctions = 4096;
// Calls that never return (panics, goroutines that block forever) must not
// grow without bound.
constexpr size_t kMaxPending = 1 << 20;

struct PendingCall {
  uint64_t tsNs = 0;
  std::vector<Value> args;
  std::optional<std::array<uint64_t, 9>> regs;
  std::vector<Frame> stack;
  bool stackCut = false;
};

// One call in flight: its process, goroutine, frame depth and probe (the
// engine's pairing, bpf_engine.hpp).
struct PendingKey {
  uint32_t pid = 0;
  uint64_t g = 0;
  uint64_t frame = 0;
  uint32_t probeId = 0;
  bool operator==(const PendingKey&) const = default;
};

struct PendingKeyHash {
  size_t operator()(const PendingKey& k) const {
    uint64_t h = k.g * 0x9E3779B97F4A7C15ull;
    h ^= (k.frame + (static_cast<uint64_t>(k.pid) << 32 | k.probeId)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

using PendingMap = std::unordered_map<PendingKey, PendingCall, PendingKeyHash>;
// Nodes of matched calls kept for the next entries: their PendingCall's
// vectors keep their capacity, so a call in steady state allocates nothing.
constexpr size_t kMaxSpareNodes = 4096;

std::array<uint64_t, 9> registersOf(const bpf::Event& e) {
  std::array<uint64_t, 9> r{};
  std::copy_n(e.regs.begin(), std::min(r.size(), e.regs.size()), r.begin());
  return r;
}

class BpfEventSession final : public EventSession {
 public:
  BpfEventSession(const ProbeRequest& r, TracedTarget target, std::optional<double> ratePerS,
                  std::shared_ptr<PreparedPath> prepared)
      : request_(r),
        target_(std::move(target)),
        names_(TypeNamer::forBinary(target_.binary())),
        ratePerS_(ratePerS),
        prepared_(std::move(prepared)) {}

  Result<void> start() {
    const GoBinary& bin = target_.binary();
    const bool isBreak = request_.action == Action::Break;
    auto patterns = patternsOf(request_);
    if (!patterns) return patterns.failure();
    if (std::string why = stackAbiRefusal(bin); !why.empty())
      return fail(ErrorKind::BadTarget, std::string(actionName(request_.action)) + ": " + target_.describe() + " was " + why,
                  "goscope count works on it (counts need neither)");
    // The programs loaded beside the analysis (engine_ahead.hpp), as count
    // does, when neither the rate probe's engine nor a rate (which sizes the
    // ring from the capture plan, known only after the selection) is there:
    // sized from the functions the patterns name (probesGuess), and the ring
    // a trace without a rate gets.
    // A guess that does not serve is loaded again at the take.
    std::optional<EngineAhead> ahead;
    if (!ratePerS_ && (!prepared_ || !prepared_->engine)) {
      const size_t named = namedFunctions(bin, *patterns);
      if (isBreak || named <= kMaxTracedFunctions)  // more fails below: nothing to load for
        ahead.emplace(eventEngineOptions(request_, bin, probesGuess(named), bpf::kRingDefaultBytes));
    }
    // Where the probes go: eventSelectionOptions (prepared_engine.hpp), the
    // rate probe's choice too.
    auto sel = selectFunctions(bin, *patterns, eventSelectionOptions(request_), target_.describe());
    if (!sel) return sel.failure();
    sel_ = std::move(*sel);
    if (!isBreak && sel_.functions.size() > kMaxTracedFunctions)
      return fail(ErrorKind::Usage,
                  "trace: " + std::to_string(sel_.functions.size()) + " functions match; tracing prints a line per call",
                  "narrow the pattern, or use goscope count / latency");
    CaptureOptions copts;
    copts.maxString = request_.capture.maxString;
    // A function every call of which was inlined has no arguments in
    // registers to read: nothing is captured for it.
    // The runtime's type records, read once for every function: where a
    // stripped method's signature comes from.
    RuntimeTypeGraph graph(bin);
    for (const auto& f : sel_.functions)
      traces_.push_back(f.inlinedOnly ? FunctionTrace{} : traceFor(bin, *f.fn, request_.signatures, copts, &graph));

    const bool stack = request_.capture.stack;
    bpf::RingSize ring{bpf::kRingDefaultBytes, false, false};
    if (!isBreak) {
      // Sized from the rate the plan expects (ring_size.hpp): a call is two
      // records (8-byte ring header + struct gs_event each) and the blocks
      // its reads capture at most (a gs_block + data padded to 8); a stack
      // adds up to GS_MAX_STACK_DEPTH words to each. The dearest function.
      uint64_t perCall = 0;
      for (const auto& t : traces_) {
        uint64_t bytes = 2 * (8 + sizeof(gs_event));
        for (const auto* reads : {&t.plan.entryReads, &t.plan.returnReads})
          for (const auto& r : *reads) bytes += sizeof(gs_block) + ((r.maxLen + 7u) & ~7u);
        perCall = std::max(perCall, bytes);
      }
      if (stack) perCall += 2 * 8 * GS_MAX_STACK_DEPTH;
      ring = bpf::ringSizeFor(ratePerS_, perCall);
      if (ring.fromRate)
        spdlog::debug("trace: event ring buffer {} MB for {:.0f} calls/s (~{} bytes a call, {:.1f} s of backlog){}",
                      ring.bytes >> 20, *ratePerS_, perCall, bpf::kRingBacklogS,
                      ring.capped ? ", capped: the rate asked for more" : "");
      else
        spdlog::debug("trace: event ring buffer {} MB (no call rate known: --expect-rate sizes it)", ring.bytes >> 20);
    }
    const bpf::EngineOptions eo = eventEngineOptions(request_, bin, sel_.functions.size(), ring.bytes);
    // --filter, bound to each function's arguments before anything is loaded
    // (a name one of them lacks is said now).
    std::vector<std::vector<BoundFilterTerm>> filters(sel_.functions.size());
    if (request_.filter)
      for (size_t i = 0; i < sel_.functions.size(); i++) {
        auto b = filterFor(traces_[i], *request_.filter, sel_.functions[i].fn->name);
        if (!b) return b.failure();
        filters[i] = std::move(*b);
      }
    // Assembled in one place (bpf_session.hpp): the rate probe's engine
    // when the plan left one that fits (its links kept when they are
    // exactly this session's points), else the programs loaded beside the
    // analysis or now; then the probes configured and attached.
    BpfSessionSpec spec;
    spec.options = eo;
    spec.prepared = std::move(prepared_);
    spec.pid = request_.target.pid;
    spec.ahead = ahead ? &*ahead : nullptr;
    // From each configuration on, its probe captures what this session asks.
    for (size_t i = 0; i < sel_.functions.size(); i++) {
      bpf::ProbeConfig cfg;
      cfg.count = true;  // the hit counts the cost meter reads
      cfg.eventAtEntry = true;
      cfg.eventAtReturn = !isBreak;
      cfg.userStack = stack;
      if (request_.capture.args) cfg.entryReads = traces_[i].plan.entryReads;
      if (request_.capture.results && !isBreak) cfg.returnReads = traces_[i].plan.returnReads;
      // The count stays every call (the hits the cost meter prices: a
      // filtered call still trapped); events only for calls that pass.
      cfg.filter = filters[i];
      spec.probes.push_back({sel_.functions[i].probeId, std::move(cfg)});
    }
    // Handed over (the engine keeps them; no copy at the peak RSS).
    spec.points = std::move(sel_.points);
    sel_.points.clear();
    spec.path = target_.attachPath();
    spec.pidFilter = target_.pidFilter();
    spec.checkIdentity = [this] { return target_.checkIdentity(); };
    auto assembled = assembleBpf(std::move(spec));
    if (!assembled) return assembled.failure();
    engine_ = std::move(assembled->engine);
    attach_ = std::move(assembled->attach);
    // The probes are on from here (a -c command runs from its release, just
    // below): -d counts from this moment, not from when run() is called.
    onS_ = assembled->onS;
    // The overhead bound (overhead_bound.hpp), priced before the release.
    bound_ = std::make_unique<OverheadBound>(meterFor(sel_.functions, !isBreak, request_, target_.pidFilter()),
                                             eventBoundRules(request_.maxOverheadExplicit, request_.action == Action::Trace));
    if (auto rel = target_.release(); !rel) return rel;
    if (target_.isLaunched()) onS_ = monotonicSeconds();
    if (!target_.isBinaryWide()) {
      if (auto bias = target_.loadBias()) setBias(*bias);
      // A -c command that ran and exited before its maps could be read (a
      // short program) leaves no load bias to look up: the entry events carry
      // it instead, as the probed address minus the probe's link-time address.
      else if (target_.isLaunched()) deriveBias_ = true;
      else return bias.failure();
    }
    return {};
  }

  Backend path() const override { return Backend::Bpf; }
  std::string accessNotice() const override { return engine_ ? session::accessNotice(*engine_, target_) : ""; }

  std::vector<std::string> argumentSources() const override {
    std::vector<std::string> lines;
    for (size_t i = 0; i < traces_.size() && i < sel_.functions.size(); i++) {
      const FunctionTrace& t = traces_[i];
      const std::string& name = sel_.functions[i].fn->name;
      // "types from X": X as list --json's signature_from names it.
      const std::string from = name + ": types from " + argumentsFromName(t.from);
      const std::string placed = t.traceback ? ", placed: " + t.traceback->placesFrom +
                                                   "; no results (the binary does not say how many words it returns)"
                                             : "";
      if (!t.inferenceRefused.empty())
        lines.push_back(name + ": the signature its receiver's method table gives is not used: " + t.inferenceRefused);
      switch (t.from) {
        case ArgumentsFrom::Dwarf: lines.push_back(from); break;
        case ArgumentsFrom::Given: lines.push_back(from + ": the signature on the command line"); break;
        case ArgumentsFrom::Interface:
          lines.push_back(from + ": its receiver's method table, checked against the traceback layout: " + t.inferred);
          break;
        case ArgumentsFrom::Receiver:
          lines.push_back(from + ": its receiver's named type's runtime type record (the method's own types are not in the "
                                 "binary), the other arguments by the runtime's traceback layout: " + layoutText(*t.traceback) + placed);
          break;
        case ArgumentsFrom::Layout:
          lines.push_back(from + ": the runtime's traceback layout: " + argInfoShape(t.traceback->args) + placed);
          break;
        case ArgumentsFrom::None:
          lines.push_back(from + ": the raw registers");
          break;
      }
    }
    return lines;
  }

  std::string announcement() const override {
    char line[512];
    if (request_.action == Action::Break) {
      std::snprintf(line, sizeof line,
                    "goscope: BPF entry probe on %s (%zu function%s) in %s in %.1f ms: the process does not stop; Ctrl-C to stop",
                    request_.locations.front().c_str(), sel_.functions.size(), sel_.functions.size() == 1 ? "" : "s",
                    target_.describe().c_str(), attach_.attachMs);
    } else {
      return attachedLine(sel_, attach_, target_.describe());
    }
    return line;
  }

  EventTotals run(const std::function<bool(const Call&)>& sink) override {
    const double t0 = onS_ > 0 ? onS_ : monotonicSeconds();
    t0_ = t0;
    auto onEvent = [&](const bpf::Event& e) { onEventOf(e, sink); };
    LoopOptions loop{0, request_.durationS, [this] { return done(); }, t0};
    EndReason why;
    {
      // A write to a pipe nobody reads gives way to the end (Ctrl-C,
      // SIGTERM, -d) while the probes are on, and so does a poll that is
      // delivering: the stop came 5 s late or never without it, however
      // long the reader took (util/stop_signals.hpp, endPending).
      ProbesOnScope probesOn(request_.durationS > 0 ? t0 + request_.durationS : 0);
      why = runSessionLoop(target_, loop,
                           [&](double untilS) {
                             (void)engine_->poll(std::min(millisecondsUntil(untilS), 100), onEvent);
                             idle();
                             govern(true);
                           },
                           [](const IntervalDue&) {}).why;
      // The session ends at -d's deadline even when goscope saw it late:
      // calls after it are not the session's (bpf_ktime_get_ns's clock).
      const double endS = why == EndReason::Duration ? t0 + request_.durationS : monotonicSeconds();
      endNs_ = static_cast<uint64_t>(endS * 1e9);
      setSessionEnding();  // from here no write waits for stdout's reader while the probes are on
      // What the ring holds now is shown before the detach, which waits for an
      // RCU grace period per link (docs/reliability.md, "Durations, intervals
      // and held output"): the results do not wait for it. Bounded,
      // as the kernel keeps writing while the probes are on; the rest is read
      // after the detach.
      const double drainUntil = monotonicSeconds() + kPreDetachDrainS;
      while (!outputClosed_ && !hitsReached() && monotonicSeconds() < drainUntil) {
        auto n = engine_->poll(0, onEvent);
        if (!n || *n == 0) break;
      }
    }
    // Off first, then what is still in the ring, in full: with the probes
    // attached the kernel kept writing while goscope read, and the session's
    // end (Ctrl-C, -d) came seconds late on a hot function.
    // After Ctrl-C too: those calls happened and are shown, not dropped.
    if (auto lost = engine_->linksLost()) linksLost_ = *lost;
    auto detached = engine_->detachAll();
    // Not when stdout drops what it is given (a reader that does not read,
    // a user who will not wait: util/stop_signals.hpp, outputDropped).
    while (!outputClosed_ && !hitsReached() && !outputDropped()) {
      auto n = engine_->poll(0, onEvent);
      if (!n || *n == 0) break;
    }
    // No entry event gave the bias (only call sites and inlined bodies ran).
    if (deriveBias_) {
      giveUpBias();
      deliverHeld(sink);
    }
    govern(false);
    EventTotals t = totals();
    t.activeS = monotonicSeconds() - t0;
    t.cost = bound_->meter().totals(t.activeS);
    t.end = outputClosed_                 ? EventEnd::OutputClosed
            : stopAsked_                  ? EventEnd::Signal
            : why == EndReason::Finished  ? EventEnd::HitCount
            : why == EndReason::Duration  ? EventEnd::Duration
            : why == EndReason::TargetExited ? EventEnd::TargetExited
            : why == EndReason::TargetExeced ? EventEnd::TargetExeced
                                             : EventEnd::Signal;
    if (t.end == EventEnd::TargetExeced) t.execedTo = target_.execedTo();
    if (t.end == EventEnd::TargetExited) t.commandStatus = target_.commandExitStatus();
    if (linksLost_) {  // every probe went with the link holder
      t.end = EventEnd::Failed;
      t.failed = Error{ErrorKind::External, *linksLost_, "the events printed above end there; run goscope again"};
    }
    t.detachedPoints = detached.points;
    t.detachMs = detached.detachMs;
    t.cost.detachMs = detached.detachMs;
    t.hiddenCalls = engine_->stats().foreignCalls;  // every probe is off: final
    t.cost.hiddenCalls = t.hiddenCalls;
    if (request_.filter) {
      const auto st = engine_->stats();
      t.cost.filteredOut = st.filteredOut;
      t.cost.eventsSent = st.events;
    }
    return t;
  }

 private:
  void stop() override { stopAsked_ = true; }

  // How long the ring is read before the detach at most (the rest after it).
  static constexpr double kPreDetachDrainS = 0.1;
  bool entriesLost_ = false;
  std::optional<std::string> linksLost_;  // the link holder died (said before detaching)
  uint64_t endNs_ = 0;                    // the session's end, once it has come
  bool hitsReached() const { return request_.maxHits > 0 && delivered_ >= request_.maxHits; }

  bool done() const {
    return stopAsked_ || outputClosed_ || (request_.maxHits > 0 && delivered_ >= request_.maxHits);
  }

  // The overhead bound with trace's and break's rules (eventBoundRules,
  // overhead_bound.hpp), at most every 250 ms: when the probes have taken
  // more than the budget for a second, trace's dearest function's events
  // are sampled (1 in N: the program's work shrinks), and if it is sampled
  // already its probes are dropped (the trap itself costs too much); break
  // drops. Without --max-overhead it only warns, once.
  void govern(bool act) {
    EngineProbes probes(*engine_);
    bound_->govern(probes, monotonicSeconds() - t0_, act, [this](const BoundAction& a) { bound(a); });
  }

  void setBias(uint64_t b) {
    bias_ = b;
    names_.setLoadBias(b);
  }

  // The frames to show (break's --stack N keeps N); `cut` is set when there
  // were more, recorded or not (Call::stackCut).
  std::vector<Frame> frames(std::span<const uint64_t> pcs, bool& cut) const {
    std::vector<Frame> out;
    for (const auto& f : symbolizeStack(target_.binary().pclntab(), pcs, bias_))
      out.push_back(Frame{f.pc, f.source.function, f.source.file, f.source.line, f.known, f.source.inlined});
    if (request_.capture.stackFrames > 0 && out.size() > static_cast<size_t>(request_.capture.stackFrames)) {
      out.resize(request_.capture.stackFrames);
      cut = true;
    }
    return out;
  }

  void deliver(Call& c, const std::function<bool(const Call&)>& sink) {
    ++delivered_;
    if (!sink(c)) outputClosed_ = true;
  }

  void onEventOf(const bpf::Event& e, const std::function<bool(const Call&)>& sink) {
    if (e.probeId >= traces_.size()) return;
    if (deriveBias_) {
      // Until the load bias is known, events are held, in order: decoded
      // without it, an interface's dynamic type and a stack's frames would
      // name nothing (a leaf probed at its call sites comes first in many
      // short programs, and its event does not say which site it is).
      if (!biasFromEntry(e) && held_.size() < kMaxHeld) {
        holdEvent(e);
        return;
      }
      if (deriveBias_) giveUpBias();  // no entry event in sight: on without it, and said
      deliverHeld(sink);
    }
    decodeEvent(e, sink);
  }

  // The bias from an entry event: the probed address minus its link-time
  // one (the jbe, or the first instruction: also with --entry). A call
  // site's event does not say which of the sites it is: not used.
  bool biasFromEntry(const bpf::Event& e) {
    const bool plainEntry = e.site == bpf::SiteKind::Entry || e.site == bpf::SiteKind::EntryMarked;
    if (!e.ip || !(plainEntry || e.site == bpf::SiteKind::EntryStackCheck)) return false;
    const GoFunction& fn = *sel_.functions[e.probeId].fn;
    setBias(e.ip - (plainEntry ? fn.entry : sel_.functions[e.probeId].probeAddress));
    deriveBias_ = false;
    return true;
  }

  // A copy of an event that owns its captured bytes (an Event's spans point
  // into the ring, valid only during the poll callback).
  struct HeldEvent {
    bpf::Event e;
    std::vector<std::vector<uint8_t>> bytes;  // one per block; its buffer does not move with the HeldEvent
  };

  void holdEvent(const bpf::Event& e) {
    HeldEvent h{e, {}};
    h.bytes.reserve(e.blocks.size());
    for (size_t i = 0; i < e.blocks.size(); i++) {
      h.bytes.emplace_back(e.blocks[i].bytes.begin(), e.blocks[i].bytes.end());
      h.e.blocks[i].bytes = std::span<const uint8_t>(h.bytes.back());
    }
    held_.push_back(std::move(h));
  }

  void giveUpBias() {
    deriveBias_ = false;
    biasMissing_ = true;
  }

  // The held events, in the order they came.
  void deliverHeld(const std::function<bool(const Call&)>& sink) {
    std::vector<HeldEvent> held;
    held.swap(held_);
    if (!held.empty())
      spdlog::debug("bpf: {} events held until the load bias was {}", held.size(),
                    biasMissing_ ? "given up (no entry event)" : "known from an entry event");
    for (const HeldEvent& h : held) decodeEvent(h.e, sink);
  }

  void decodeEvent(const bpf::Event& e, const std::function<bool(const Call&)>& sink) {
    if (outputClosed_ || hitsReached() || outputDropped()) return;
    if (biasMissing_) decodedWithoutBias_++;  // said in the end lines
    // Calls after the session's end, while the probes come off one by one
    // (an entry's probe can go before its return's): not the session's.
    if (endNs_ && e.tsNs > endNs_) return;
    const FunctionTrace& t = traces_[e.probeId];
    const GoFunction& fn = *sel_.functions[e.probeId].fn;
    // An inlined body: no RET follows and its arguments are not in
    // registers (docs/go-runtime.md, "Inlined calls"); delivered at once.
    if (bpf::isInlinedSite(e.site)) {
      Call c = inlinedCallAt(fn, e);
      deliver(c, sink);
      return;
    }
    if (request_.action == Action::Break) {
      if (e.isReturn()) return;
      Call c = callAt(fn, e);
      if (request_.capture.args) fillArgs(c.args, c.argRegisters, e, t);
      c.argsPositional = t.traceback.has_value();
      c.argsMore = t.argsMore;
      if (request_.capture.stack) {
        c.stackCut = e.stackCut;
        c.stack = frames(e.stack, c.stackCut);
      }
      deliver(c, sink);
      return;
    }
    const PendingKey key{e.pid, e.g, e.frame, e.probeId};
    if (!e.isReturn()) {
      if (pending_.size() >= kMaxPending) {
        dropped_ += pending_.size();
        pending_.clear();
      }
      PendingCall* p = nullptr;
      if (!spare_.empty()) {
        PendingMap::node_type node = std::move(spare_.back());
        spare_.pop_back();
        node.key() = key;
        auto r = pending_.insert(std::move(node));
        if (!r.inserted) spare_.push_back(std::move(r.node));  // the same key again (a lost return): overwritten
        p = &r.position->second;
      } else {
        p = &pending_[key];
      }
      p->tsNs = e.tsNs;
      p->regs.reset();
      p->args.clear();
      p->stack.clear();
      p->stackCut = false;
      if (request_.capture.args) fillArgs(p->args, p->regs, e, t);
      if (request_.capture.stack) {
        p->stackCut = e.stackCut;
        p->stack = frames(e.stack, p->stackCut);
      }
      return;
    }
    // One Call, reused: its vectors and strings keep their capacity.
    Call& c = call_;
    resetCall(c, fn, e);
    c.argsPositional = t.traceback.has_value();
    c.argsMore = t.argsMore;
    if (auto it = pending_.find(key); it != pending_.end()) {
      PendingCall& p = it->second;
      c.tsNs = p.tsNs;
      c.durationNs = e.tsNs - p.tsNs;
      std::swap(c.args, p.args);  // the node gets c's old vector, for its next call
      c.argRegisters = p.regs;
      std::swap(c.stack, p.stack);
      c.stackCut = p.stackCut;
      auto node = pending_.extract(it);
      if (spare_.size() < kMaxSpareNodes) spare_.push_back(std::move(node));
    } else if (!entriesLost()) {
      // A call already running when the probes went in: its arguments,
      // duration and stack were never seen. Left out (counted, and said on
      // stderr), not printed with nulls nor counted against -n.
      unmatched_++;
      return;
    } else {
      // Or a call whose entry the full ring refused (counted in "events
      // lost"): it ran in the session, so it is shown, what only the entry
      // carried said to be unknown.
      c.argsUnavailable = "its entry was lost (ring buffer full)";
    }
    if (request_.capture.results && !t.traceback) {
      if (t.raw) {
        c.resultRegister = e.regs[0];
      } else {
        decodeResultValues(e, t.layout, t.plan, names_, resultsSpare_);
        c.results.emplace(std::move(resultsSpare_));
      }
    }
    deliver(c, sink);
    if (c.results) {
      resultsSpare_ = std::move(*c.results);  // back for the next return
      c.results.reset();
    }
  }

  // Whether the kernel has refused an event yet: until then a return with
  // no entry can only be a call entered before the attach. Asked of the
  // kernel's counters until the first loss, then remembered.
  bool entriesLost() {
    if (!entriesLost_) entriesLost_ = engine_->stats().lost() > 0;
    return entriesLost_;
  }

  // Clears `c` for a return of `fn` (what callAt gives for trace), keeping
  // every vector's and string's capacity.
  static void resetCall(Call& c, const GoFunction& fn, const bpf::Event& e) {
    c.function.assign(fn.name);
    c.file.clear();
    c.line = 0;
    c.pid = e.pid;
    c.goid = static_cast<int64_t>(e.goid);
    c.tsNs = e.tsNs;
    c.durationNs.reset();
    c.args.clear();
    c.argsPositional = false;
    c.argsMore = false;
    c.argsUnavailable.clear();
    c.inlinedInto.reset();
    c.results.reset();
    c.argRegisters.reset();
    c.resultRegister.reset();
    c.exprs.clear();
    c.locals.clear();
    c.stack.clear();
    c.stackCut = false;
  }

  // The call of an inlined body: where it was called from (the caller and
  // the call's file:line, from the probed pc's inline frames), no arguments.
  Call inlinedCallAt(const GoFunction& fn, const bpf::Event& e) const {
    Call c;
    c.function = fn.name;
    c.pid = e.pid;
    c.goid = static_cast<int64_t>(e.goid);
    c.tsNs = e.tsNs;
    c.argsUnavailable = "inlined";
    bool unused = false;
    auto where = frames(std::span<const uint64_t>(&e.ip, 1), unused);
    // Innermost first: [0] is the inlined function itself, [1] its caller at the call.
    if (where.size() >= 2) {
      c.inlinedInto = where[1].function;
      c.file = where[1].file;
      c.line = where[1].line;
    }
    if (request_.capture.stack) {
      c.stackCut = e.stackCut;
      c.stack = frames(e.stack, c.stackCut);
    }
    return c;
  }

  Call callAt(const GoFunction& fn, const bpf::Event& e) const {
    Call c;
    c.function = fn.name;
    c.pid = e.pid;
    c.goid = static_cast<int64_t>(e.goid);
    c.tsNs = e.tsNs;
    if (request_.action == Action::Break) {
      const uint64_t entry = fn.entry + bias_;
      bool unused = false;
      auto where = frames(std::span<const uint64_t>(&entry, 1), unused);
      if (!where.empty()) {
        c.file = where[0].file;
        c.line = where[0].line;
      }
    }
    return c;
  }

  void fillArgs(std::vector<Value>& args, std::optional<std::array<uint64_t, 9>>& regs, const bpf::Event& e,
                const FunctionTrace& t) const {
    if (t.raw) {
      regs = registersOf(e);
    } else if (t.traceback) {
      // words_: reused, as the Call's own vectors are (no allocation per event).
      decodeArgValues(e, t.layout, t.plan, names_, words_, true);
      bool more = false;
      groupWords(*t.traceback, words_, args, more);
    } else {
      decodeArgValues(e, t.layout, t.plan, names_, args, true);
    }
  }

  EventTotals totals() const {
    EventTotals t;
    t.path = Backend::Bpf;
    t.calls = delivered_;
    auto st = engine_->stats();
    t.lostRingFull = st.lostRingFull;
    t.lostBusy = st.lostBusy;
    t.unfinished = pending_.size() + dropped_;
    t.unmatched = unmatched_;
    t.decodedWithoutBias = decodedWithoutBias_;
    t.sampledOut = st.sampledOut;
    t.hiddenCalls = st.foreignCalls;
    t.target = target_.describe();
    t.targetIsLaunched = target_.isLaunched();
    t.targetIsBinaryWide = target_.isBinaryWide();
    t.pid = request_.target.pid.value_or(0);
    return t;
  }

  ProbeRequest request_;
  TracedTarget target_;
  TypeNamer names_;
  mutable std::vector<Value> words_;  // fillArgs's scratch: a traceback layout's decoded words
  Selection sel_;
  std::vector<FunctionTrace> traces_;
  std::unique_ptr<bpf::Engine> engine_;
  bpf::AttachStats attach_;
  uint64_t bias_ = 0;
  bool deriveBias_ = false;
  // Events that came while the bias was unknown (deriveBias_), at most kMaxHeld.
  static constexpr size_t kMaxHeld = 1 << 16;
  std::vector<HeldEvent> held_;
  bool biasMissing_ = false;  // given up: every event is decoded without the bias
  uint64_t decodedWithoutBias_ = 0;
  PendingMap pending_;
  std::vector<PendingMap::node_type> spare_;  // kMaxSpareNodes
  Call call_;                                 // the return being delivered
  std::vector<Value> resultsSpare_;           // call_.results' vector between returns
  size_t dropped_ = 0;
  uint64_t unmatched_ = 0;
  long long delivered_ = 0;
  bool outputClosed_ = false;
  std::unique_ptr<OverheadBound> bound_;
  double t0_ = 0;
  double onS_ = 0;  // CLOCK_MONOTONIC: when the probes went on (a -c command: when it was let run)
  std::atomic<bool> stopAsked_{false};
  std::optional<double> ratePerS_;  // calls a second the plan expects (ring size)
  std::shared_ptr<PreparedPath> prepared_;  // the rate probe's engine, until start() takes or releases it
};

}  // namespace

Result<std::unique_ptr<EventSession>> startBpfEvents(const ProbeRequest& r, TracedTarget target,
                                                     std::optional<double> ratePerS,
                                                     std::shared_ptr<PreparedPath> prepared) {
  auto s = std::make_unique<BpfEventSession>(r, std::move(target), ratePerS, std::move(prepared));
  if (auto ok = s->start(); !ok) return ok.failure();
  return std::unique_ptr<EventSession>(std::move(s));
}

}  // namespace goscope::session
