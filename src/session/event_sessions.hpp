// The two implementations of session::EventSession, chosen by
// startEventSession (event_session.cpp). Internal to src/session.
#pragma once

#include <memory>

#include "session/event_session.hpp"
#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/function_selection.hpp"
#include "process/traced_target.hpp"

namespace goscope::session {

// `target` is the request's target, opened by the caller (for -c: started,
// held before exec until the probes are attached).
// ratePerS: the calls a second the plan expects (Plan::ratePerS), for the
// ring buffer's size; none: the default size. prepared: the rate probe's
// engine (Plan::prepared), taken over when it fits instead of loading one.
Result<std::unique_ptr<EventSession>> startBpfEvents(const ProbeRequest& request, TracedTarget target,
                                                     std::optional<double> ratePerS = std::nullopt,
                                                     std::shared_ptr<PreparedPath> prepared = nullptr);
// A running process (-p) that dlv attaches to, as the command opened it.
// `mayMove`: BPF can serve the request, so a session whose stops exceed the
// budget ends with EventEnd::OverBudget for the caller to go on on BPF.
Result<std::unique_ptr<EventSession>> startDelveEvents(const ProbeRequest& request, TracedTarget& target, bool mayMove);
// A Delve session that ended to move to BPF (see above).
bool wantsToMove(const EventSession& session);

// "goscope: 12 functions, 30 probes attached to PID 7 (...) in 4.1 ms (uprobe_multi); Ctrl-C to stop"
std::string attachedLine(const Selection& selection, const bpf::AttachStats& stats, const std::string& target);

// Not fully privileged (docs/security.md): the line said before a -b
// session's announcement (only its user's processes are traced), empty when
// every process is seen or the target is one process (whose access was checked).
std::string accessNotice(const bpf::Engine& engine, const TracedTarget& target);

}  // namespace goscope::session
