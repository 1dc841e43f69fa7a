// What read, sample, break and set share: their options (-p, --json,
// --dlv-arg), attaching with checks that give better errors than dlv's own,
// letting Ctrl-C/SIGTERM cut a blocking Delve call short, and the line that
// says how long the target was stopped.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "api/delve_capture.hpp"
#include "cli/args.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

std::vector<OptionSpec> delveOptionSpecs(std::vector<OptionSpec> extra);

// -p as a pid; Usage error naming `sub` when it is missing.
pid_t delvePidOrRaise(const Args& args, const std::string& sub);

// Installs the stop signals, checks that `pid` is a Go program Delve can
// read (a stripped binary gets the BPF hint without starting dlv) and
// attaches. The target is stopped when this returns.
std::unique_ptr<delve::DelveSession> attachOrRaise(pid_t pid, const Args& args);

// While alive, a stop signal interrupts the session's blocking call (the
// handler calls DelveSession::interrupt(), which is async-signal-safe).
StopHookScope interruptOnStop(delve::DelveSession& session);

// The one line on stderr after a session: attach, detach, stopped time.
// `note` qualifies the stopped time (e.g. what it leaves out).
void reportTimings(const delve::DelveSession& session, double totalMs, const char* note = nullptr);

using api::msSince;
using api::sessionError;

}  // namespace goscope::cli
