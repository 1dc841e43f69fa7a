// The rate probe's engine, kept for the session that follows:
// the rate probe loads the BPF programs to count hits; when the plan then
// picks BPF, the event session takes that engine over (its probes
// reconfigured for what the session captures, its counters zeroed) instead
// of loading the programs a second time. Internal to src/session.
//
// The rate probe's links stay attached until the plan is made: a Delve plan
// detaches them (api::plan) before Delve attaches. A BPF session keeps them
// when they hold exactly its own points (same addresses, probe ids and site
// kinds: break on functions with a stack check), and configures its probes:
// from that write on every call is the session's, probed once, by one link
// (a call already running then is a return without an entry, as at any
// attach). Otherwise it detaches them and attaches its own: a session that
// kept them and added its own (a trace's returns) would end with two links
// to detach one after the other, which measured slower on a hot function
// than the one detach here (bench/README.md, rate_probe.sh).
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
#include "process/target.hpp"

namespace goscope {

// Plan::prepared (strategy.hpp).
struct PreparedPath {
  std::unique_ptr<bpf::Engine> engine;  // programs loaded, the probe's links attached (count only)
  pid_t pid = 0;                        // the process the probe counted in
  std::vector<uint32_t> probeIds;       // the probe ids the rate probe configured
  double loadMs = 0;                    // what loading took: what a session taking it saves
};

}  // namespace goscope

namespace goscope::session {

// The rate probe (rate_probe.cpp). With `keep`: the engine is loaded with
// the options the request's event session would use (eventEngineOptions,
// the ring bpf::kRingPreparedBytes) and handed to *keep with its links
// still attached (api::plan detaches them unless the plan is BPF); without,
// loaded plainly, detached and released.
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

}  // namespace goscope::session
