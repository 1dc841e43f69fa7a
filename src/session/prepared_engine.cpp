#include "session/prepared_engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "backend/bpf/engine_fit.hpp"
#include "binary/go_runtime_facts.hpp"

namespace goscope::session {

bpf::EngineOptions eventEngineOptions(const ProbeRequest& r, const GoBinary& bin, size_t functions,
                                      uint32_t ringBytes) {
  bpf::EngineOptions eo{.goidOffset = goidOffset(bin)};
  eo.measureProgramTime = true;  // the cost meter's figure of what the programs ran
  if (r.action != Action::Break) eo.ringBytes = ringBytes;
  if (r.capture.stack) eo.stackTraceEntries = bpf::EngineOptions::kFoldedStacks;
  const auto n = static_cast<uint32_t>(functions);
  eo.maxLatencyProbes = std::max<uint32_t>(eo.maxLatencyProbes, n);
  eo.maxCaptureSpecs = std::max<uint32_t>(eo.maxCaptureSpecs, 2 * n);
  eo.maxFilters = std::max<uint32_t>(eo.maxFilters, n);
  return eo;
}

SelectionOptions eventSelectionOptions(const ProbeRequest& r) {
  const bool isBreak = r.action == Action::Break;
  // trace of a leaf whose entry would be single-stepped: at its call sites
  // and the instruction after each (function_selection.hpp), as count and
  // latency; --stack, --filter and break keep the entry.
  return {.returns = !isBreak, .plainEntry = r.plainEntry, .ignoreMissing = r.ignoreMissing, .inlined = true,
          .inlinedRefusal = r.filter ? kFilterInlined : "",
          .callSites = !isBreak && !r.capture.stack && !r.filter};
}

TakenEngine takePreparedEngine(const std::shared_ptr<PreparedPath>& prepared, std::optional<pid_t> pid,
                               const bpf::EngineOptions& wanted) {
  TakenEngine t;
  if (!prepared || !prepared->engine) return t;
  std::string why;
  if (!pid || prepared->pid != *pid) why = "it counted in another process";
  else why = bpf::whyEngineDoesNotFit(prepared->engine->options(), wanted);
  if (why.empty()) {
    if (auto r = prepared->engine->resetStats(); !r) why = r.error().message;
  }
  if (!why.empty()) {
    spdlog::debug("bpf: rate probe's engine not reused ({}): released, the programs are loaded again", why);
    prepared->engine.reset();  // detached (the destructor) before the session loads its own
    return t;
  }
  t.engine = std::move(prepared->engine);
  t.probeIds = prepared->probeIds;
  t.savedMs = prepared->loadMs;
  spdlog::debug("bpf: rate probe's engine reused: programs not loaded again ({:.1f} ms saved)", t.savedMs);
  return t;
}

}  // namespace goscope::session
