// What the probing subcommands (count, latency, trace, break) share: the
// target options (-p, -c, -b), -i/-d, --json, opening the target once, and
// the lines printed around a session.
#pragma once

#include <vector>

#include "api/goscope.hpp"
#include "cli/args.hpp"
#include "probe/probe_request.hpp"
#include "process/traced_target.hpp"

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

// Not fully privileged (docs/security.md): a whole line (already "goscope: ...")
// on stderr when not empty — the access notice before a -b session.
void printLineIfAny(const std::string& line);
// ... and after a BPF session, how many calls of other users' processes the
// kernel dropped (nothing when none).
void printHiddenCalls(uint64_t calls);
// A short -c PIE's events decoded without its load address (EventTotals::decodedWithoutBias).
void printDecodedWithoutBias(uint64_t events);

// goscope's exit code once a session has ended and everything recorded is
// printed (docs/errors.md): a -p target that exited ended the session
// normally, exit 0 with a line saying so (`strict`: exit 8, an error line);
// a -c command that ended it gives its own exit status, as time and strace
// do; a target that replaced its program (exec) is exit 8. Errors (the
// link holder's death, the error that ended a Delve session) are raised.
int exitCodeAfter(const TracedTarget& target, EndReason why, bool strict);
int exitCodeAfter(const api::EventTotals& totals, bool strict);

// The one line after a Delve session: how long the target was stopped.
// `note` qualifies the stopped time (e.g. what it leaves out).
void reportTimings(const api::DelveCosts& costs, const char* note = nullptr);

}  // namespace goscope::cli
