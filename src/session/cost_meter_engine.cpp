// sampleEngine (session/cost_meter.hpp) and EngineProbes (overhead_bound.hpp):
// the meter fed from, and the bound acting on, a loaded engine. Apart from
// the meter's arithmetic and the bound's rules, which link without the BPF
// programs (their unit tests build without the kernel's BTF: tests/README.md).
#include "session/cost_meter.hpp"
#include "session/overhead_bound.hpp"
#include "backend/bpf/bpf_engine.hpp"

#include <algorithm>

namespace goscope::session {

bool sampleEngine(CostMeter& meter, const bpf::Engine& engine, double now, bool force, bool plusFiltered) {
  if (!force && now - meter.lastSampleS() < 0.25) return false;
  auto counts = engine.counts();
  if (!counts) return false;
  if (plusFiltered) {
    auto filtered = engine.filteredCounts();
    if (!filtered) return false;
    for (size_t i = 0; i < counts->size() && i < filtered->size(); i++) (*counts)[i] += (*filtered)[i];
  }
  meter.sample(*counts, now, engine.programRunNs());
  return true;
}

bool EngineProbes::sample(CostMeter& meter, double nowS, bool force, bool plusFiltered) {
  return sampleEngine(meter, engine_, nowS, force, plusFiltered);
}

Result<void> EngineProbes::sampleEvery(uint32_t id, uint32_t every) { return engine_.setSampleEvery(id, every); }

Result<void> EngineProbes::drop(const std::vector<uint32_t>& ids) {
  // By probe id: a session of 200,000 points tests each once.
  std::vector<bool> dropped(ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end()) + size_t{1}, false);
  for (uint32_t id : ids) dropped[id] = true;
  auto d = engine_.detachPoints([&](const bpf::AttachPoint& p) { return p.probeId < dropped.size() && dropped[p.probeId]; });
  if (!d) return d.failure();
  return {};
}

uint64_t EngineProbes::calls(uint32_t id) const {
  auto n = engine_.count(id);
  return n ? *n : 0;
}

}  // namespace goscope::session
