#include "backend/bpf/engine_fit.hpp"

namespace goscope::bpf {

// Every field of EngineOptions is weighed below: a field added there fails
// this until it is.
static_assert(sizeof(EngineOptions) == 56, "a field was added to EngineOptions: weigh it in whyEngineDoesNotFit");

namespace {

std::string mb(uint32_t bytes) { return std::to_string(bytes >> 20) + " MB"; }

std::string smaller(const char* what, uint32_t loaded, uint32_t wanted) {
  return std::string("its ") + what + " holds " + std::to_string(loaded) + ", the session needs " + std::to_string(wanted);
}

}  // namespace

std::string whyEngineDoesNotFit(const EngineOptions& loaded, const EngineOptions& wanted) {
  // Read-only data of the programs: fixed at load.
  if (loaded.goidOffset != wanted.goidOffset || loaded.stackHiOffset != wanted.stackHiOffset)
    return "it was loaded for other runtime.g offsets";
  if (loaded.attachMode != wanted.attachMode) return "it was loaded for another attach mode";
  if (loaded.measureProgramTime != wanted.measureProgramTime) return "its programs' run time is measured otherwise";
  // The wake-up threshold is 1/16 of the ring unless given: a larger ring
  // wakes the reader later, which poll()'s 50 ms drain bounds.
  if (loaded.wakeupBytes != wanted.wakeupBytes) return "its reader wake-up threshold differs";
  if (loaded.maxPollDelayMs != wanted.maxPollDelayMs) return "its reader's drain interval differs";
  // Map sizes: larger than asked serves, smaller does not.
  if (loaded.ringBytes < wanted.ringBytes)
    return "its " + mb(loaded.ringBytes) + " ring is smaller than the " + mb(wanted.ringBytes) + " the session asks for";
  if (loaded.maxProbes < wanted.maxProbes) return smaller("probe table", loaded.maxProbes, wanted.maxProbes);
  if (loaded.maxLatencyProbes < wanted.maxLatencyProbes)
    return smaller("latency table", loaded.maxLatencyProbes, wanted.maxLatencyProbes);
  if (loaded.maxCaptureSpecs < wanted.maxCaptureSpecs)
    return smaller("capture table", loaded.maxCaptureSpecs, wanted.maxCaptureSpecs);
  if (loaded.maxFilters < wanted.maxFilters) return smaller("filter table", loaded.maxFilters, wanted.maxFilters);
  if (loaded.maxInFlight < wanted.maxInFlight) return smaller("in-flight table", loaded.maxInFlight, wanted.maxInFlight);
  if (loaded.stackTraceEntries < wanted.stackTraceEntries || loaded.stackCountEntries < wanted.stackCountEntries)
    return "its stack maps are smaller than the session's";
  return "";
}

}  // namespace goscope::bpf
