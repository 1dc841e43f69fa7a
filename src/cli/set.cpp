// goscope set: writes a variable of a running program through Delve. It
// changes what the program does, so it is refused without --allow-write;
// it prints the value before and after, both read while the target is
// stopped around the write.
#include <boost/json.hpp>

#include <cstdio>
#include <iostream>

#include "backend/delve/value_render.hpp"
#include "cli/command.hpp"
#include "cli/delve_options.hpp"
#include "cli/strategy_options.hpp"
#include "target/target.hpp"
#include "util/json_text.hpp"

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

struct Change {
  Assignment a;
  rpc::Variable before, after;
};

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
  pid_t pid = delvePidOrRaise(args, "set");
  {
    ProbeRequest request;
    request.action = Action::Set;
    request.target.pid = pid;
    for (const auto& a : assignments) request.writes.push_back({a.var, a.value});
    request.dlvArgs = args.all("dlv-arg");
    applyStrategyOptions(args, request);
    planOrRaise(args, request, *openProcessForPlanning(pid).binary, pid);
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto session = attachOrRaise(pid, args);
  std::vector<Change> done;
  std::optional<Error> failed;
  for (const auto& a : assignments) {
    Change c{a, {}, {}};
    auto before = session->eval(a.var);
    auto written = before ? session->set(a.var, a.value) : Result<void>(before.failure());
    auto after = written ? session->eval(a.var) : Result<rpc::Variable>(written.failure());
    if (!after) {
      failed = after.error();
      failed->message = a.var + "=" + a.value + ": " + failed->message;
      break;
    }
    c.before = std::move(*before);
    c.after = std::move(*after);
    done.push_back(std::move(c));
  }
  auto detached = session->detach();

  for (const auto& c : done) {
    if (args.has("json")) {
      boost::json::object o{{"var", c.a.var},
                            {"type", delve::typeName(c.after)},
                            {"old", delve::valueJson(c.before)},
                            {"new", delve::valueJson(c.after)}};
      std::cout << jsonText(o) << '\n';
    } else {
      std::cout << c.a.var << " = " << delve::valueText(c.before) << " -> " << delve::valueText(c.after) << " ("
                << delve::typeName(c.after) << ")\n";
    }
  }
  std::cout.flush();
  reportTimings(*session, msSince(t0));
  if (failed) raise(sessionError(pid, *failed));
  orRaise(std::move(detached));
  return 0;
}

}  // namespace goscope::cli
