// sampleEngine (api/cost_meter.hpp): the meter fed from a loaded engine. Apart
// from the meter's arithmetic, which links without the BPF programs (its unit
// tests build without the kernel's BTF: tests/README.md).
#include "api/cost_meter.hpp"
#include "backend/bpf/bpf_engine.hpp"

namespace goscope::api {

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

}  // namespace goscope::api
