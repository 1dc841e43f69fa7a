// What the calibration cache (host-costs.json) holds: every recent measure
// of this host's per-hit figures and of a Delve stop, each marked with the
// load average and the online CPUs when it was taken
// (strategy/cost_choice.hpp decides which a plan uses). This file turns them
// into JSON and back, and reads the machine's load now; where the file is
// and how it is written is host_costs_cache.cpp's.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "strategy/cost_choice.hpp"

namespace goscope::session {

struct CachedMeasures {
  std::vector<ProbeMeasure> probes;
  std::vector<DelveMeasure> delves;
  // The file held figures without a load mark and no measures (an older
  // goscope's): not used, said.
  bool unmarked = false;
};

// The measures of a parsed file that is this host's (`host` == identity).
// Implausible entries (a figure outside what a probe or a stop can cost, a
// load below 0, no CPUs) are dropped one by one, not the whole file.
CachedMeasures measuresFromJson(const boost::json::object& doc);
// `chosen`: the figures plans use now, also written under the keys an
// older goscope reads (emulated_ns, stepped_ns, return_ns, source;
// delve_stop_ns, delve_source), so that an older goscope sharing the cache
// reads them instead of calibrating again and rewriting the file without
// the measures. Its probe figures only when measured ("calibrated ..."),
// its Delve figure only when measured.
boost::json::object measuresToJson(const std::string& identity, const CachedMeasures& m, const HostCosts& chosen);

// The machine now: /proc/loadavg's 1-minute figure, the online CPUs and the
// wall clock.
LoadMark loadNow();

}  // namespace goscope::session
