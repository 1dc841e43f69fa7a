// When a session takes over the rate probe's loaded engine instead of loading
// its own (backend/bpf/engine_fit.hpp): larger maps serve, smaller ones and
// other program constants do not, and the reason is said.
#include <doctest/doctest.h>

#include "backend/bpf/engine_fit.hpp"

using goscope::bpf::EngineOptions;
using goscope::bpf::whyEngineDoesNotFit;

TEST_CASE("engine fit: the same or larger maps serve, a smaller ring or other constants do not") {
  EngineOptions loaded{.goidOffset = 152, .ringBytes = 32u << 20, .measureProgramTime = true};
  EngineOptions wanted = loaded;
  CHECK(whyEngineDoesNotFit(loaded, wanted).empty());
  wanted.ringBytes = 4u << 20;  // a slow trace's ring: the larger one serves
  CHECK(whyEngineDoesNotFit(loaded, wanted).empty());
  wanted.ringBytes = 64u << 20;
  CHECK(whyEngineDoesNotFit(loaded, wanted) == "its 32 MB ring is smaller than the 64 MB the session asks for");
  wanted = loaded;
  wanted.maxCaptureSpecs = 5000;
  CHECK(whyEngineDoesNotFit(loaded, wanted) == "its capture table holds 1024, the session needs 5000");
  wanted = loaded;
  wanted.stackTraceEntries = 16384;
  CHECK(whyEngineDoesNotFit(loaded, wanted) == "its stack maps are smaller than the session's");
  wanted = loaded;
  wanted.goidOffset = 160;
  CHECK(!whyEngineDoesNotFit(loaded, wanted).empty());
  wanted = loaded;
  wanted.measureProgramTime = false;
  CHECK(!whyEngineDoesNotFit(loaded, wanted).empty());
}
