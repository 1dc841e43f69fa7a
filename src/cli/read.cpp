// goscope read: a one-off read of globals or expressions. Plain package
// variables goscope can lay out are read straight from the process's memory,
// without stopping it (the direct-read plan); anything else goes through
// Delve — attach, evaluate each, detach — and the target is stopped from the
// attach to the detach, so values are printed only afterwards, and stderr
// says how long that was. Both print the same text and JSON.
#include <cstdio>
#include <iostream>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/delve_options.hpp"
#include "cli/probe_options.hpp"
#include "cli/read_limit_options.hpp"
#include "cli/strategy_options.hpp"
#include "output/output.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

int runRead(const std::vector<std::string>& argv) {
  auto specs = delveOptionSpecs(strategyOptionSpecs(false));
  for (const auto& o : readLimitSpecs()) specs.push_back(o);
  auto args = orRaise(parseArgs("read", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope read -p PID [--json] EXPR...   (globals are package-qualified: main.counter)", specs);
    return 0;
  }
  const auto& exprs = args.positional();
  if (exprs.empty()) raise({ErrorKind::Usage, "read: name at least one expression, e.g. main.counter"});
  ProbeRequest request;
  request.action = Action::Read;
  request.target.pid = delvePidOrRaise(args, "read");
  request.capture.exprs = exprs;
  request.readLimits = readLimitsOrRaise(args);
  request.dlvArgs = args.all("dlv-arg");
  if (auto d = args.get("dlv")) request.dlvPath = *d;
  applyStrategyOptions(args, request);
  TracedTarget target = openTracedTarget(request);
  Plan plan = planOrRaise(args, request, target);

  const pid_t pid = *request.target.pid;
  auto result = api::read(request, plan, target, output::noticeToStderr);
  if (!result) raise(api::sessionError(pid, result.error()));
  // What was read is printed even when a later expression failed.
  auto out = output::makeOutput(args.has("json"));
  for (size_t i = 0; i < result->values.size(); ++i) out->readValue(exprs[i], result->values[i]);
  std::cout.flush();
  if (result->path == Backend::DirectRead) {
    if (result->targetStopped)  // stopped by the user (kill -STOP): the read leaves it so
      output::toStderr("goscope: PID %d is stopped (state T) and stays stopped: read directly from its memory in %.2f ms\n",
                   pid, result->directMs);
    else
      output::toStderr("goscope: PID %d was not stopped: read directly from its memory in %.2f ms\n", pid,
                   result->directMs);
    return 0;
  }
  reportTimings(result->costs);
  if (result->interrupted) {
    output::toStderr("goscope: interrupted after %zu of %zu expressions\n", result->values.size(), exprs.size());
    return 0;
  }
  if (result->failed) raise(*result->failed);
  if (result->detachFailed) raise(*result->detachFailed);
  return 0;
}

}  // namespace goscope::cli
