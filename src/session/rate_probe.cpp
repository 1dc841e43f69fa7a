// The strategy layer's rate probe: before choosing between Delve (about a
// millisecond of stopped process per hit) and BPF (microseconds), count the
// hits in the kernel for a moment. The count sits at the cheap placement
// (the stack check's branch, or a leaf's call sites), so measuring costs the target next to nothing.
// It stops as soon as the count settles the choice (rate_verdict.hpp).
// The engine it loads can be kept for the BPF session the plan may choose
// (prepared_engine.hpp): loading the programs is most of what the probe
// costs before its window (~50 ms idle, seconds on a loaded machine).
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "session/bpf_session.hpp"
#include "session/rate_probe.hpp"
#include "session/prepared_engine.hpp"
#include "backend/bpf/ring_size.hpp"
#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/function_selection.hpp"
#include "probe/pattern.hpp"
#include "strategy/rate_verdict.hpp"
#include "binary/go_runtime_facts.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

Result<double> measureHitRate(const GoBinary& bin, pid_t pid, const std::vector<Pattern>& patterns, double windowS,
                              double limitPerS) {
  return measureHitRateKeeping(bin, pid, patterns, windowS, limitPerS, nullptr, nullptr);
}

Result<double> measureHitRateKeeping(const GoBinary& bin, pid_t pid, const std::vector<Pattern>& patterns,
                                     double windowS, double limitPerS, const ProbeRequest* request,
                                     std::shared_ptr<PreparedPath>* keep) {
  auto proc = Process::attach(pid);
  if (!proc) return fail(proc.error());
  auto sel = selectFunctions(bin, patterns, {.ignoreMissing = true, .callSites = true}, "PID " + std::to_string(pid));
  if (!sel) return fail(sel.error());
  // Kept for a session: loaded as that session would load it (its ring
  // before the rate is known: ring_size.hpp, kRingPreparedBytes).
  const bpf::EngineOptions eo = keep && request
                                    ? eventEngineOptions(*request, bin, sel->functions.size(), bpf::kRingPreparedBytes)
                                    : bpf::EngineOptions{.goidOffset = goidOffset(bin)};
  // Assembled where every BPF session is (bpf_session.hpp): loaded now,
  // each function's probe counting, attached through the file analysed in
  // the process that runs it (not a later exec's program, nor another
  // process that took the PID: docs/security.md).
  BpfSessionSpec spec;
  spec.options = eo;
  for (const auto& f : sel->functions) spec.probes.push_back({f.probeId, bpf::ProbeConfig{.count = true}});
  spec.points = std::move(sel->points);
  spec.path = bin.elf().handlePath();
  spec.pidFilter = pid;
  spec.checkIdentity = [&] { return proc->verifyIdentity("before the rate probe was attached", &bin.elf().identity()); };
  spec.refuseAfterStop = false;
  auto assembled = assembleBpf(std::move(spec));
  if (!assembled) return fail(assembled.error());
  auto engine = std::move(assembled->engine);
  const double loadMs = assembled->loadMs;
  auto total = [&]() -> Result<uint64_t> {
    auto counts = engine->counts();
    if (!counts) return fail(counts.error());
    uint64_t n = 0;
    for (const auto& f : sel->functions)
      if (f.probeId < counts->size()) n += (*counts)[f.probeId];
    return n;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto until = t0 + std::chrono::duration<double>(windowS);
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  RateVerdict verdict = RateVerdict::Unclear;
  while (std::chrono::steady_clock::now() < until && !stopRequested() && proc->alive()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (limitPerS <= 0 || elapsed() < kRateProbeFloorS) continue;
    auto n = total();
    if (!n) break;
    if ((verdict = rateVerdict(static_cast<double>(*n), elapsed(), limitPerS)) != RateVerdict::Unclear) break;
  }
  auto n = total();
  const double took = elapsed();
  // Kept for a session, the links stay: it keeps them when they are exactly
  // its points (no detach, which waits until the target's code is the
  // file's again: tens of ms idle, up to ~2 s on a loaded machine,
  // docs/kernel.md, "Who drops a uprobe_multi link's last reference"), and
  // api::plan detaches them before any Delve plan runs. Else off now.
  if (!n || !keep || !request) engine->detachAll();
  if (!n) return fail(n.error());
  if (keep && request) {
    auto p = std::make_shared<PreparedPath>();
    p->engine = std::move(engine);
    p->pid = pid;
    for (const auto& f : sel->functions) p->probeIds.push_back(f.probeId);
    p->loadMs = loadMs;
    *keep = std::move(p);
  }
  spdlog::debug("strategy: rate probe: {} hits in {:.0f} ms ({}), Delve's limit {:.1f} hits/s", *n, took * 1000,
                verdict == RateVerdict::Above   ? "stopped early: clearly above"
                : verdict == RateVerdict::Below ? "stopped early: clearly below"
                                                : "the whole window",
                limitPerS);
  return took > 0 ? static_cast<double>(*n) / took : 0.0;
}

}  // namespace goscope::session
