// What a probe hit and a Delve stop cost on this host: calibrated, cached
// (host_costs_cache.cpp), and the figures every plan, cost line and the
// overhead demo use. Reached by programs on the API as api::hostCosts and
// its neighbours (api/goscope.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strategy/cost_choice.hpp"
#include "util/result.hpp"

namespace goscope::session {

// What a probe hit costs on this host, by placement, and a Delve stop: the
// figures every plan, cost line and the overhead demo use. The lowest
// recent measure cached in $XDG_CACHE_HOME/goscope/host-costs.json for this
// kernel and CPU that was not taken on a much busier machine than now
// (strategy/cost_choice.hpp); with none, calibrated now (~0.3 s, a note on
// stderr saying why) and added to the cache; the documented defaults
// (saying so in `source`) without BPF privileges or with
// GOSCOPE_NO_CALIBRATION set. `source` and `delveSource` say which measure
// was used and which were set aside.
HostCosts hostCosts();
// Reads the cached figures now, if there are any (never calibrates): on a
// thread beside the analysis, so that hostCosts() after the attach does not
// read /proc/cpuinfo and the cache then (~10 ms before the attach line of
// `count -b buf '*'`).
void preloadHostCosts();
// Measures the probe placements again now and adds the measure to the
// cache (the earlier ones and the Delve measures stay); returns the figures
// plans use from now on: the lowest usable measure, which may be an
// earlier one taken at a lower load. Fails without BPF privileges or when
// the measure is refused.
Result<HostCosts> recalibrate();
// The measure recalibrate() (or a first hostCosts()) took in this process.
std::optional<ProbeMeasure> calibratedNow();
// Where the measured figures are cached, in words: "cached in PATH" (with
// why it is not $XDG_CACHE_HOME/goscope when it is a per-user temporary
// directory instead), or "not cached: REASON" when they could not be written.
std::string hostCostsCacheLocation();
// A Delve session measured its stops: `hits` breakpoint hits stopped the
// target `stoppedAtHitsMs` in all. This process uses it from now on; it is
// cached with the load now, for later plans to weigh (docs/overhead.md).
void recordDelveStopCost(uint64_t hits, double stoppedAtHitsMs);

}  // namespace goscope::session
