// goscope read: a one-off read of globals or expressions. Plain package
// variables goscope can lay out are read straight from the process's memory,
// without stopping it (the direct-read plan); anything else goes through
// Delve — attach, evaluate each, detach — and the target is stopped from the
// attach to the detach, so values are printed only afterwards, and stderr
// says how long that was. Both print the same text and JSON.
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

// One-off reads can afford more than Delve's per-hit default: nested
// structs two levels down and longer strings.
constexpr rpc::LoadConfig kReadLoad{true, 2, 256, 64, -1};

void print(const std::string& expr, const rpc::Variable& v, bool json) {
  if (json) {
    boost::json::object o{{"expr", expr}, {"type", delve::typeName(v)}, {"value", delve::valueJson(v)}};
    std::cout << jsonText(o) << '\n';
  } else {
    std::cout << expr << " = " << delve::valueText(v) << " (" << delve::typeName(v) << ")\n";
  }
}

}  // namespace

int runRead(const std::vector<std::string>& argv) {
  auto specs = delveOptionSpecs(strategyOptionSpecs(false));
  auto args = orRaise(parseArgs("read", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope read -p PID [--json] EXPR...   (globals are package-qualified: main.counter)", specs);
    return 0;
  }
  const auto& exprs = args.positional();
  if (exprs.empty()) raise({ErrorKind::Usage, "read: name at least one expression, e.g. main.counter"});
  pid_t pid = delvePidOrRaise(args, "read");

  ProbeRequest request;
  request.action = Action::Read;
  request.target.pid = pid;
  request.capture.exprs = exprs;
  request.dlvArgs = args.all("dlv-arg");
  applyStrategyOptions(args, request);
  Target target = openProcessForPlanning(pid);
  Plan plan = planOrRaise(args, request, *target.binary, pid);
  if (plan.backend == Backend::DirectRead) {
    const auto t0 = std::chrono::steady_clock::now();
    auto values = api::readDirect(request, target);
    if (values) {
      for (size_t i = 0; i < values->size(); ++i) print(exprs[i], (*values)[i], args.has("json"));
      std::cout.flush();
      std::fprintf(stderr, "goscope: PID %d was not stopped: read directly from its memory in %.2f ms\n", pid, msSince(t0));
      return 0;
    }
    // A process that exited has nothing for Delve either.
    if (!plan.fallback || values.error().kind == ErrorKind::TargetGone) raise(sessionError(pid, values.error()));
    reportFallback(plan.backend, *plan.fallback, values.error());
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto session = attachOrRaise(pid, args);
  std::vector<rpc::Variable> values;
  std::optional<Error> failed;
  for (const auto& e : exprs) {
    if (stopRequested()) break;
    auto v = session->eval(e, kReadLoad);
    if (!v) {
      failed = v.error();
      break;
    }
    values.push_back(std::move(*v));
  }
  auto detached = session->detach();
  const double total = msSince(t0);

  // What was read is printed even when a later expression failed.
  for (size_t i = 0; i < values.size(); ++i) print(exprs[i], values[i], args.has("json"));
  std::cout.flush();
  reportTimings(*session, total);
  if (failed && stopRequested()) {  // Ctrl-C: not an error of the expression
    std::fprintf(stderr, "goscope: interrupted after %zu of %zu expressions\n", values.size(), exprs.size());
    return 0;
  }
  if (failed) {
    if (failed->kind != ErrorKind::TargetGone) failed->message = exprs[values.size()] + ": " + failed->message;
    raise(sessionError(pid, *failed));
  }
  orRaise(std::move(detached));
  return 0;
}

}  // namespace goscope::cli
