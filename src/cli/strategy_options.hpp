// The options every probing subcommand shares with the strategy layer:
// --strategy auto|delve|bpf, --explain, --max-overhead PCT and
// --expect-rate HITS/S; and planning a request with them, which prints the
// plan and its reasons on stderr under --explain.
#pragma once

#include <optional>
#include <sys/types.h>
#include <vector>

#include "api/goscope.hpp"
#include "cli/args.hpp"
#include "process/target.hpp"

namespace goscope::cli {

// `perHit`: trace and break, where the rate and budget options mean something.
std::vector<OptionSpec> strategyOptionSpecs(bool perHit, bool budget = false);

// Reads the options into `request`; Usage errors for bad values.
void applyStrategyOptions(const Args& args, ProbeRequest& request);

// api::plan, raising the planner's refusal as the error; with --explain, the
// facts and the plan go to stderr (`goscope: plan ...` lines) first.
// `facts`, when given, gets what the plan was made from (break: the measured rate).
// The target's prepared engine, if the rate probe left one, waits in
// target.prepared() for the session (api::plan).
Plan planOrRaise(const Args& args, const ProbeRequest& request, TracedTarget& target,
                 TargetFacts* factsOut = nullptr);

// --explain for a subcommand with no plan to choose (list, info): `what` it
// does instead ("list reads ..."), then the same facts lines as a plan's.
void explainWithoutPlan(const std::string& what, const ProbeRequest& request, const GoBinary& binary,
                        std::optional<pid_t> pid);

// The running process a Delve-path subcommand (read, sample, break, set)
// plans for. When its executable cannot be read, the ptrace check says
// more precisely what is missing (another user's process, no
// CAP_SYS_PTRACE) than /proc does.
Target openProcessForPlanning(pid_t pid);

}  // namespace goscope::cli
