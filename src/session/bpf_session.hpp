// The one place a BPF session is assembled: its programs loaded (beside the
// analysis: engine_ahead.hpp; handed over by the rate probe:
// prepared_engine.hpp; or now), its probes configured, the target's identity
// checked last and the points attached. count and latency
// (count_session.cpp), trace and break (bpf_event_session.cpp) and the rate
// probe (rate_probe.cpp) describe what they want as a BpfSessionSpec; the
// steps and their order are here. What follows the attach stays with the
// session, in this order: the overhead bound's meter (meterFor, then
// overhead_bound.hpp), then the target's release (a -c command runs from
// there).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session/cost_meter.hpp"
#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/function_selection.hpp"
#include "probe/probe_request.hpp"
#include "util/result.hpp"

namespace goscope {
struct PreparedPath;
}

namespace goscope::session {

class EngineAhead;

// One probe id's configuration, written before the attach.
struct BpfProbe {
  uint32_t id = 0;
  bpf::ProbeConfig config;
};

struct BpfSessionSpec {
  bpf::EngineOptions options;  // what the session needs loaded
  // Where the programs come from, first that serves: the rate probe's
  // engine for the process `pid` (its links kept when they are exactly
  // `points`), the load begun beside the analysis, else a load now.
  std::shared_ptr<PreparedPath> prepared;
  std::optional<pid_t> pid;
  EngineAhead* ahead = nullptr;
  // Configured in this order (an id given twice: the last wins).
  std::vector<BpfProbe> probes;
  // Handed to the engine (no copy: buf's 222,679 points are 5 MB at the
  // start-up's peak RSS).
  std::vector<bpf::AttachPoint> points;
  // Where they go, and the check made right before (docs/security.md: the
  // file analysed, in the process that runs it).
  std::string path;
  pid_t pidFilter = 0;
  std::function<Result<void>()> checkIdentity;
  // A session refuses to attach after a stop signal ("nothing was
  // attached"); the rate probe attaches anyway, its window ends at once, and
  // the plan goes on with what it counted.
  bool refuseAfterStop = true;
  // count and latency say their start-up's steps (-v: the probes
  // configured; a terminal: "placing probes", thousands of them with '*').
  bool reportStartup = false;
};

struct AssembledBpf {
  std::unique_ptr<bpf::Engine> engine;
  bpf::AttachStats attach;  // the attach's, or the rate probe's links kept
  double onS = 0;           // CLOCK_MONOTONIC when the probes went on
  double loadMs = 0;        // what loading the programs took here (0: taken over)
};

// The steps, in order: the engine (taken or loaded; a taken one's ids this
// session does not configure disabled), the probes configured, then — unless
// the rate probe's links were kept — a stop signal refused, the identity
// checked, the points attached. A failure after the load releases the
// engine (and detaches what it attached) before returning.
Result<AssembledBpf> assembleBpf(BpfSessionSpec spec);

// The overhead bound's meter for a session just attached with `pidFilter`:
// each function priced (meteredProbe; `returns`: its returns probed too),
// the request's budget, the target's clock (one process) or the machine's
// CPUs (0: -b, any process) as the cap.
std::unique_ptr<CostMeter> meterFor(const std::vector<SelectedFunction>& functions, bool returns, const ProbeRequest& request,
                                    pid_t pidFilter);

}  // namespace goscope::session
