// What count, latency and trace share: the target options (-p, -c, -b),
// -i/-d, --json, the patterns, and the line that says what was attached.
#pragma once

#include <vector>

#include "backend/bpf/bpf_engine.hpp"
#include "cli/args.hpp"
#include "probe/probe_request.hpp"
#include "probe/pattern.hpp"
#include "session/function_selection.hpp"
#include "session/session_loop.hpp"
#include "session/traced_target.hpp"

namespace goscope::cli {

std::vector<OptionSpec> traceOptionSpecs(std::vector<OptionSpec> extra);

struct TraceSetup {
  TracedTarget target;
  std::vector<Pattern> patterns;
  LoopOptions loop;
};

// Parses the shared options, opens the target (for -c: started, held before
// exec), installs the stop signals. Throws FatalError on bad input.
TraceSetup prepareTrace(const Args& args, const std::string& subcommand, bool patternsRequired = true);

// One line on stderr: what was attached, how, how fast.
void announce(const TracedTarget& target, const Selection& sel, const bpf::AttachStats& stats, bool json);
void announce(const TraceSetup& setup, const Selection& sel, const bpf::AttachStats& stats, bool json);

// A -p target that exited or replaced its program (exec) ended the session:
// after everything recorded is printed, that is exit 8 with one line, as on
// the Delve path. A -c command that ends is the session's normal end.
void raiseIfTargetGone(const TracedTarget& target, EndReason why);

// The ProbeRequest the shared options describe: target, patterns, -i/-d.
ProbeRequest requestFromTraceArgs(const Args& args, Action action, const TraceSetup& setup);

}  // namespace goscope::cli
