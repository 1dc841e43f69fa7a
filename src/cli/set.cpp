// goscope set: writes a variable of a running program through Delve. It
// changes what the program does, so it is refused without --allow-write;
// it prints the value before and after, both read while the target is
// stopped around the write.
#include <cstdio>
#include <iostream>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/delve_options.hpp"
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "output/output.hpp"

namespace goscope::cli {

namespace {

struct Assignment {
  std::string var, value;
};

Assignment parseAssignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    raise({ErrorKind::Usage, "set: '" + text + "' is not VAR=VALUE",
           "e.g. goscope set -p PID main.counter=5 --allow-write"});
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace

int runSet(const std::vector<std::string>& argv) {
  auto specs = delveOptionSpecs({{"allow-write", 0, false, "confirm: write to the target's memory"},
                                 {"strategy", 0, true, "auto (default) or delve: writes are Delve's"},
                                 {"explain", 0, false, "print the plan, and every reason behind it, on stderr"}});
  auto args = orRaise(parseArgs("set", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope set -p PID VAR=VALUE... --allow-write [--json]", specs);
    return 0;
  }
  if (!args.has("allow-write"))
    raise({ErrorKind::Usage, "set writes to the target's memory and changes what it does: refused without --allow-write",
           "add --allow-write to confirm"});
  std::vector<Assignment> assignments;
  for (const auto& p : args.positional()) assignments.push_back(parseAssignment(p));
  if (assignments.empty()) raise({ErrorKind::Usage, "set: name VAR=VALUE, e.g. main.counter=5"});
  ProbeRequest request;
  request.action = Action::Set;
  request.target.pid = delvePidOrRaise(args, "set");
  for (const auto& a : assignments) request.writes.push_back({a.var, a.value});
  request.dlvArgs = args.all("dlv-arg");
  if (auto d = args.get("dlv")) request.dlvPath = *d;
  applyStrategyOptions(args, request);
  TracedTarget target = openTracedTarget(request);
  const Plan plan = planOrRaise(args, request, target);
  auto result = orRaise(api::write(request, plan, &target));
  auto out = output::makeOutput(args.has("json"));
  for (const auto& c : result.changes) out->change(c.var, c.before, c.after);
  std::cout.flush();
  reportTimings(result.costs);
  if (result.failed) raise(*result.failed);
  if (result.detachFailed) raise(*result.detachFailed);
  return 0;
}

}  // namespace goscope::cli
