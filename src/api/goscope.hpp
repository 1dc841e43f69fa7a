// goscope's C++ API — the one way in for the goscope CLI, the programs under
// examples/, and other tools built on the library (CMake target goscope::goscope).
//
//   1. Describe what you want: a ProbeRequest (probe/probe_request.hpp) —
//      target (-p / -c / -b), locations, what to capture, expected rate,
//      overhead budget, duration, --strategy.
//   2. Plan it: api::plan() finds out the facts the strategy layer weighs —
//      DWARF or stripped, Go version against Delve's window, dlv installed,
//      BPF and ptrace privileges, float arguments, plain variables, and, when
//      the rate decides between Delve and BPF, the hit rate measured by a
//      short in-kernel count — and returns the Plan with every reason.
//   3. Run it: AggregateSession (in-kernel call counts and latency, folded
//      stacks), EventSession (each call, on BPF or Delve, as an api::Call),
//      read, write and sample (a zero-pause direct read, or Delve).
//   4. Print values with renderText / renderJson (value/render.hpp).
//
// This is a façade: the sessions, their results and the host's costs are
// the executor layer's (src/session/, namespace goscope::session), named
// here in api:: by the using-declarations below; what api adds is the way
// from a request to them (openTarget, plan, startEventSession from a
// request alone). Only goscope's own types appear: no backend header is
// included, so a program on the API (and the CLI) cannot reach libbpf or
// dlv directly.
// Errors are values (Result<T>, util/result.hpp), never exceptions. Every
// session detaches in its destructor: the traced process is left as it was.
#pragma once

#include <optional>

#include "probe/probe_request.hpp"
#include "process/target.hpp"
#include "process/traced_target.hpp"
#include "session/aggregate_session.hpp"
#include "session/bpf_access.hpp"
#include "session/call.hpp"
#include "session/delve_choice.hpp"
#include "session/delve_work.hpp"
#include "session/doctor.hpp"
#include "session/event_session.hpp"
#include "session/fallback.hpp"
#include "session/host_costs.hpp"
#include "session/link_holder.hpp"
#include "session/memory_sample.hpp"
#include "session/rate_probe.hpp"
#include "session/session_cost.hpp"
#include "session/session_loop.hpp"
#include "strategy/cost_choice.hpp"
#include "strategy/strategy.hpp"
#include "util/result.hpp"
#include "value/render.hpp"

namespace goscope::api {

// ---- the target ---------------------------------------------------------------

// Opens request.target once for the whole command: -p PID (its executable,
// with precise ptrace errors), -b BINARY, or -c 'CMD ARGS' (started, held
// before exec until a session attaches and releases it).
Result<TracedTarget> openTarget(const ProbeRequest& request);

// What every in-kernel session needs, and what its kernel side hid
// (session/bpf_access.hpp).
using session::checkBpfPrivileges;
using session::hiddenCallsLine;

// ---- planning ---------------------------------------------------------------

// What a probe hit and a Delve stop cost on this host: the figures every
// plan uses (session/host_costs.hpp).
using session::calibratedNow;
using session::hostCosts;
using session::hostCostsCacheLocation;
using session::preloadHostCosts;
using session::recalibrate;
using session::recordDelveStopCost;

// The facts about `request`'s target that the planner weighs. `binary` is
// the target's executable (already opened by the caller, e.g. from a
// TracedTarget); `pid` the running process, when there is one (the rate is
// measured only then).
Result<TargetFacts> gatherFacts(const ProbeRequest& request, const GoBinary& binary, std::optional<pid_t> pid);

// gatherFacts + planRequest. The overload without a binary opens the target
// itself (the process's executable for -p, the file for -b or -c).
Result<Plan> plan(const ProbeRequest& request, const GoBinary& binary, std::optional<pid_t> pid,
                  TargetFacts* factsOut = nullptr);
Result<Plan> plan(const ProbeRequest& request, TargetFacts* factsOut = nullptr);
// The same for a target the caller opened (openTarget), pid r.target.pid:
// when the rate probe measured the rate and the plan is BPF, the probe's
// engine, its links still attached, is left in target.prepared() for the
// session the target is handed to (session/prepared_engine.hpp); the overloads
// above detach and release it.
Result<Plan> plan(const ProbeRequest& request, TracedTarget& target, TargetFacts* factsOut = nullptr);

// The strategy layer's rate probe (session/rate_probe.hpp).
using session::measureHitRate;

// ---- count and latency (session/aggregate_session.hpp) ---------------------------

using session::AggregateSession;
using session::CountSession;
using session::CountSnapshot;
using session::Detached;
using session::FunctionCount;

// ---- each call: trace and break (session/event_session.hpp, session/call.hpp) ----

using session::Call;
using session::EventEnd;
using session::EventSession;
using session::EventTotals;
using session::Frame;
using session::kArgumentRegisters;
using session::startEventSession;
// The line said when a planned path fails and the other is started (session/fallback.hpp).
using session::Notice;
// The same from the request alone: opens its target (openTarget), plans
// (plan), and starts the planned session.
Result<std::unique_ptr<EventSession>> startEventSession(const ProbeRequest& request, const Notice& notice = {});

// ---- what a session cost, and what its overhead bound did (session/session_cost.hpp)

using session::BoundAction;
using session::BoundCallback;
using session::describe;
using session::kindName;
using session::SessionCost;

// ---- reads, writes, samples (session/delve_work.hpp, session/memory_sample.hpp) --

using session::Change;
using session::DelveCosts;
using session::MemorySample;
using session::MemorySampleTotals;
using session::read;
using session::ReadResult;
using session::Sample;
using session::SampleTotals;
using session::sample;
using session::sampleMemory;
using session::sessionError;
using session::write;
using session::WriteResult;

// ---- Delve's choice, the fallback's notices, doctor --------------------------------

using session::chooseDelveFor;
using session::DelveChoiceInfo;
using session::doctor;
using session::DoctorByte;
using session::DoctorFunction;
using session::DoctorReport;

// The `__link-holder` entry main calls first (session/link_holder.hpp).
using session::linkHolderMain;

}  // namespace goscope::api
