// What the probing subcommands (count, latency, trace, break) share: the
// target options (-p, -c, -b), -i/-d, --json, opening the target once, and
// the lines printed around a session.
#pragma once

#include <vector>

#include "api/event_session.hpp"
#include "cli/args.hpp"
#include "probe/probe_request.hpp"
#include "api/session_loop.hpp"
#include "target/traced_target.hpp"

namespace goscope::cli {

std::vector<OptionSpec> traceOptionSpecs(std::vector<OptionSpec> extra);

// The ProbeRequest the shared options describe: the target, -i/-d; the
// subcommand adds its locations and captures.
ProbeRequest requestFromTraceArgs(const Args& args, Action action);

// Parses the request's function patterns (count, latency, trace), opens its
// target once for the whole command (for -c: started, held before exec) and
// installs the stop signals. Throws FatalError.
TracedTarget openTracedTarget(ProbeRequest& request);
// On a terminal, a line on stderr shows how far setting up has got.
void showProgressOnTerminal();

// A line goscope says while it works (a fallback): "goscope: LINE" on stderr.
void printNotice(const std::string& line);
// Not fully privileged (docs/security.md): a whole line (already "goscope: ...")
// on stderr when not empty — the access notice before a -b session.
void printLineIfAny(const std::string& line);
// ... and after a BPF session, how many calls of other users' processes the
// kernel dropped (nothing when none).
void printHiddenCalls(uint64_t calls);

// A -p target that exited or replaced its program (exec) ended the session:
// after everything recorded is printed, that is exit 8 with one line, as on
// the Delve path. A -c command that ends is the session's normal end.
void raiseIfTargetGone(const TracedTarget& target, EndReason why);
// The same for an event session, and the error that ended a Delve session.
void raiseIfSessionFailed(const api::EventTotals& totals);

// The one line after a Delve session: how long the target was stopped.
// `note` qualifies the stopped time (e.g. what it leaves out).
void reportTimings(const api::DelveCosts& costs, const char* note = nullptr);

}  // namespace goscope::cli
