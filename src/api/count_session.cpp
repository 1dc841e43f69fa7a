// api::CountSession: call counts kept in the kernel (a per-CPU array;
// nothing crosses to user space per hit), with an optional read of a global
// on each hit of the first function — the talks' counter demo. `goscope
// count` is this class plus printing.
#include <algorithm>
#include <chrono>
#include <thread>

#include "api/goscope.hpp"
#include "probe/pattern.hpp"
#include "session/go_runtime_facts.hpp"
#include "util/stop_signals.hpp"

namespace goscope::api {

Result<std::unique_ptr<CountSession>> CountSession::start(const ProbeRequest& r) {
  auto target = TracedTarget::open(r.target);
  if (!target) {
    Error e = target.error();
    if (e.kind == ErrorKind::Usage) e.message = "count: " + e.message;
    return fail(e);
  }
  return start(std::move(*target), r);
}

Result<std::unique_ptr<CountSession>> CountSession::start(TracedTarget target, const ProbeRequest& r) {
  std::vector<Pattern> patterns;
  for (const auto& l : r.locations) {
    auto p = Pattern::parse(l);
    if (!p) return fail(p.error());
    patterns.push_back(std::move(*p));
  }
  const std::string sub = actionName(r.action);
  const bool latency = r.action == Action::Latency;
  if (patterns.empty()) return fail(ErrorKind::Usage, sub + ": name at least one function pattern, e.g. 'main.*'");
  std::unique_ptr<CountSession> s(new CountSession(std::move(target)));
  s->loop_ = LoopOptions{r.intervalS, r.durationS};
  const GoBinary& bin = s->target_.binary();
  auto sel = selectFunctions(bin, patterns, {.returns = latency, .plainEntry = r.plainEntry}, s->target_.describe());
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

  bpf::EngineOptions eo{.goidOffset = goidOffset(bin)};
  if (latency) eo.maxLatencyProbes = std::max<uint32_t>(eo.maxLatencyProbes, static_cast<uint32_t>(s->selection_.functions.size()));
  s->latency_ = latency;
  auto engine = bpf::Engine::load(eo);
  if (!engine) return fail(engine.error());
  s->engine_ = std::move(*engine);
  auto configureRead = [&]() -> Result<void> {
    auto bias = s->target_.loadBias();
    if (!bias) return fail(bias.error());
    return s->engine_->configureProbe(
        0, bpf::ProbeConfig{.count = true, .readGlobal = bpf::GlobalRead{read->address + *bias, static_cast<uint8_t>(read->size)}});
  };
  for (const auto& f : s->selection_.functions)
    if (auto c = s->engine_->configureProbe(f.probeId, bpf::ProbeConfig{.count = true, .latency = latency}); !c)
      return fail(c.error());
  // A PIE started by -c has no load bias until it runs: configure the read
  // after release (reconfiguring zeroes that probe's count of the first
  // moments); everything else knows its addresses now.
  const bool readAfterStart = read && s->target_.isLaunched() && bin.elf().isPie();
  if (read && !readAfterStart)
    if (auto c = configureRead(); !c) return fail(c.error());
  auto stats = s->engine_->attach(s->target_.attachPath(), s->target_.pidFilter(), s->selection_.points);
  if (!stats) return fail(stats.error());
  s->attach_ = std::move(*stats);
  if (auto rel = s->target_.release(); !rel) return fail(rel.error());
  if (readAfterStart)
    if (auto c = configureRead(); !c) return fail(c.error());
  s->startS_ = monotonicSeconds();
  return s;
}

CountSession::~CountSession() { detach(); }

Result<CountSnapshot> CountSession::snapshot() const {
  if (detached_) return fail(ErrorKind::Internal, "count session already detached");
  auto counts = engine_->counts();
  if (!counts) return fail(counts.error());
  CountSnapshot snap;
  snap.elapsedS = monotonicSeconds() - startS_;
  for (const auto& f : selection_.functions) {
    FunctionCount fc{f.fn->name, f.probeId < counts->size() ? (*counts)[f.probeId] : 0, std::nullopt};
    if (latency_)
      if (auto l = engine_->latency(f.probeId)) fc.latency = std::move(*l);
    snap.functions.push_back(std::move(fc));
  }
  if (readVariable_)
    if (auto g = engine_->globalValue(0); g && g->tsNs != 0) snap.readValue = static_cast<int64_t>(g->value);
  return snap;
}

EndReason CountSession::run(const std::function<void(const CountSnapshot&)>& onInterval) {
  return runSessionLoop(
      target_, loop_, [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); },
      [&] {
        if (auto s = snapshot(); s && onInterval) onInterval(*s);
      });
}

void CountSession::stop() { requestStop(); }

bpf::DetachStats CountSession::detach() {
  if (detached_ || !engine_) return {};
  detached_ = true;
  return engine_->detachAll();
}

}  // namespace goscope::api
