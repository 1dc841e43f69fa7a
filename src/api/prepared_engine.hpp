// The rate probe's engine, kept for the session that follows (issue #14):
// the rate probe loads the BPF programs to count hits; when the plan then
// picks BPF, the event session takes that engine over (its probes
// reconfigured for what the session captures, its counters zeroed) instead
// of loading the programs a second time. Internal to src/api.
//
// The rate probe's links stay attached until the plan is made: a Delve plan
// detaches them (api::plan) before Delve attaches. A BPF session keeps them
// when every point they hold is one of its own (same address, probe id and
// site kind: its entries), attaches only the points it adds (returns,
// inlined sites) while the probes still only count, and then configures its
// probes: from that write on, each address is probed once, by one link, and
// every call is the session's (none counted twice; a call already running
// then is a return without an entry, as at any attach). Otherwise it
// detaches them all and attaches its own. Either way the detach (which waits
// until the target's code is the file's again) leaves the start-up path.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/function_selection.hpp"
#include "probe/pattern.hpp"
#include "probe/probe_request.hpp"
#include "strategy/strategy.hpp"
#include "target/target.hpp"

namespace goscope {

// Plan::prepared (strategy.hpp).
struct PreparedPath {
  std::unique_ptr<bpf::Engine> engine;  // programs loaded, the probe's links attached (count only)
  pid_t pid = 0;                        // the process the probe counted in
  std::vector<uint32_t> probeIds;       // the probe ids the rate probe configured
  double loadMs = 0;                    // what loading took: what a session taking it saves
};

}  // namespace goscope

namespace goscope::api {

// The rate probe (rate_probe.cpp). With `keep`: the engine is loaded with
// the options the request's event session would use (eventEngineOptions,
// the ring bpf::kRingPreparedBytes) and, its links detached, handed to
// *keep; without, loaded plainly and released.
Result<double> measureHitRateKeeping(const GoBinary& binary, pid_t pid, const std::vector<Pattern>& patterns,
                                     double windowS, double limitPerS, const ProbeRequest* request,
                                     std::shared_ptr<PreparedPath>* keep);

// The engine options of an event session (trace, break) for `request` on
// `binary` with `functions` functions selected: the one place they are
// decided, for the session and for the rate probe that loads ahead of it.
// ringBytes: trace's event ring (break's entry events keep the default).
bpf::EngineOptions eventEngineOptions(const ProbeRequest& request, const GoBinary& binary, size_t functions,
                                      uint32_t ringBytes);

// Where an event session's probes go for `request` (its selection's
// options): the one place, for the session and for the rate probe that
// counts at a trace's own entry points so that the session can keep them.
SelectionOptions eventSelectionOptions(const ProbeRequest& request);

struct TakenEngine {
  std::unique_ptr<bpf::Engine> engine;  // none: load one (its points: engine->attachedPointList())
  std::vector<uint32_t> probeIds;       // the ids the rate probe configured (to disable those the session does not use)
  double savedMs = 0;
};

// The prepared engine for a session on `pid` wanting `wanted`, when there
// is one and it fits (bpf::whyEngineDoesNotFit), its engine-wide counters
// zeroed, the rate probe's links still attached; else nothing, and the
// prepared engine is detached and released before the caller loads its
// own. -v says which, and why.
TakenEngine takePreparedEngine(const std::shared_ptr<PreparedPath>& prepared, std::optional<pid_t> pid,
                               const bpf::EngineOptions& wanted);

}  // namespace goscope::api
