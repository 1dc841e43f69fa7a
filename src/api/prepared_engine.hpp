// The rate probe's engine, kept for the session that follows (issue #14):
// the rate probe loads the BPF programs to count hits; when the plan then
// picks BPF, the event session takes that engine over (its probes
// reconfigured for what the session captures, its counters zeroed) instead
// of loading the programs a second time. Internal to src/api.
//
// The rate probe detaches every link before the plan is made again: the
// session attaches its own points (its selection has returns and inlined
// sites the probe's count lacks), so no call is counted by both, and every
// probe the session uses is configured before its first attach.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/bpf/bpf_engine.hpp"
#include "probe/pattern.hpp"
#include "probe/probe_request.hpp"
#include "strategy/strategy.hpp"
#include "target/target.hpp"

namespace goscope {

// Plan::prepared (strategy.hpp).
struct PreparedPath {
  std::unique_ptr<bpf::Engine> engine;  // programs loaded, nothing attached
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

struct TakenEngine {
  std::unique_ptr<bpf::Engine> engine;  // none: load one
  std::vector<uint32_t> probeIds;       // the ids the rate probe configured (to disable those the session does not use)
  double savedMs = 0;
};

// The prepared engine for a session on `pid` wanting `wanted`, when there
// is one and it fits (bpf::whyEngineDoesNotFit), its engine-wide counters
// zeroed; else nothing, and the prepared engine is released before the
// caller loads its own. -v says which, and why.
TakenEngine takePreparedEngine(const std::shared_ptr<PreparedPath>& prepared, std::optional<pid_t> pid,
                               const bpf::EngineOptions& wanted);

}  // namespace goscope::api
