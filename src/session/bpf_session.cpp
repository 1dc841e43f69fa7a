#include "session/bpf_session.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "session/engine_ahead.hpp"
#include "session/host_costs.hpp"
#include "session/prepared_engine.hpp"
#include "session/session_loop.hpp"
#include "util/progress.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

namespace {

// The rate probe's points kept attached when they are exactly the session's
// (prepared_engine.hpp). Only all of them: a session that added points (a
// trace's returns) would end with two links to detach, one after the other,
// which took longer on a hot function than detaching the probe's link now
// and attaching one (bench/README.md, rate_probe.sh).
bool samePoints(const std::vector<bpf::AttachPoint>& kept, const std::vector<bpf::AttachPoint>& wanted) {
  auto same = [](const bpf::AttachPoint& a, const bpf::AttachPoint& b) {
    return a.fileOffset == b.fileOffset && a.probeId == b.probeId && a.site == b.site && a.generation == b.generation;
  };
  return kept.size() == wanted.size() && std::all_of(kept.begin(), kept.end(), [&](const bpf::AttachPoint& k) {
           return std::any_of(wanted.begin(), wanted.end(), [&](const bpf::AttachPoint& p) { return same(k, p); });
         });
}

size_t distinctIds(const std::vector<BpfProbe>& probes) {
  std::vector<uint32_t> ids;
  ids.reserve(probes.size());
  for (const auto& p : probes) ids.push_back(p.id);
  std::sort(ids.begin(), ids.end());
  return static_cast<size_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

}  // namespace

Result<AssembledBpf> assembleBpf(BpfSessionSpec spec) {
  AssembledBpf out;
  // The rate probe's engine when the plan left one that fits (programs
  // loaded, the count's links attached: prepared_engine.hpp), else a new one.
  TakenEngine taken = takePreparedEngine(spec.prepared, spec.pid, spec.options);
  spec.prepared.reset();
  std::vector<bpf::AttachPoint> kept;
  if (taken.engine) {
    out.engine = std::move(taken.engine);
    kept = out.engine->attachedPointList();
    if (!samePoints(kept, spec.points)) {
      auto d = out.engine->detachAll();
      spdlog::debug("bpf: the rate probe's probes detached ({} in {:.1f} ms: not exactly this session's points)", d.points,
                    d.detachMs);
      kept.clear();
    }
    // The probe's ids this session does not configure below do nothing
    // (none of their points is attached; this is for certainty).
    for (uint32_t id : taken.probeIds) {
      const bool used = std::any_of(spec.probes.begin(), spec.probes.end(), [&](const BpfProbe& p) { return p.id == id; });
      if (!used)
        if (auto d = out.engine->disableProbe(id); !d) return d.failure();
    }
    if (!kept.empty()) {
      // The session's probes are attached already, counting only until
      // the configuration below.
      out.attach.points = kept.size();
      out.attach.links = out.engine->usesUprobeMulti() ? 1 : kept.size();
      out.attach.uprobeMulti = out.engine->usesUprobeMulti();
      spdlog::debug("bpf: the rate probe's probes kept attached ({} kept: no detach, no re-attach)", kept.size());
    }
  } else {
    const auto loadStart = std::chrono::steady_clock::now();
    auto engine = spec.ahead ? spec.ahead->take(spec.options) : bpf::Engine::load(spec.options);
    if (!engine) return engine.failure();
    out.loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart).count();
    out.engine = std::move(*engine);
  }
  // From each configuration on, its probe does what this session asks.
  for (const BpfProbe& p : spec.probes)
    if (auto c = out.engine->configureProbe(p.id, p.config); !c) return c.failure();
  if (spec.reportStartup)
    spdlog::debug("start-up: {} probes configured ({:.0f} ms after goscope started)", distinctIds(spec.probes),
                  secondsSinceProcessStart() * 1000);
  if (!kept.empty()) {
    out.onS = monotonicSeconds();
    return out;
  }
  if (spec.refuseAfterStop && stopRequested())
    return fail(ErrorKind::Interrupted, "interrupted before the probes were placed; nothing was attached");
  const size_t points = spec.points.size();
  if (spec.reportStartup) reportProgress("placing probes", 0, points);
  // The target is still the one analysed (docs/security.md): checked last,
  // right before the attach.
  if (spec.checkIdentity)
    if (auto same = spec.checkIdentity(); !same) return same.failure();
  auto stats = out.engine->attach(spec.path, spec.pidFilter, std::move(spec.points));
  // The probes are on from here: a session's clock (-d, -i, elapsed) starts
  // now, not when its run() is called (a -c command: at its release).
  out.onS = monotonicSeconds();
  if (spec.reportStartup) reportProgress("placing probes", points, points);
  if (!stats) return stats.failure();
  out.attach = std::move(*stats);
  return out;
}

std::unique_ptr<CostMeter> meterFor(const std::vector<SelectedFunction>& functions, bool returns, const ProbeRequest& r,
                                    pid_t pidFilter) {
  const HostCosts costs = hostCosts();
  std::vector<CostMeter::Probe> probes;
  for (const auto& f : functions) probes.push_back(meteredProbe(costs, f, returns));
  auto meter = std::make_unique<CostMeter>(std::move(probes), costs, r.maxOverheadPct, r.maxOverheadExplicit);
  if (pidFilter != 0) meter->watchTarget(pidFilter);
  else meter->watchMachine(onlineCpus());
  return meter;
}

}  // namespace goscope::session
