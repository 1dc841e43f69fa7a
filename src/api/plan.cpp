// api::gatherFacts and api::plan: the facts and the plan of
// session::factsAndPlan (session/target_facts.hpp), for a target the caller
// opened, a binary it read, or the request's target named alone.
#include "api/goscope.hpp"
#include "process/target.hpp"
#include "session/target_facts.hpp"
#include "util/launched_child.hpp"

namespace goscope::api {

Result<TargetFacts> gatherFacts(const ProbeRequest& r, const GoBinary& bin, std::optional<pid_t> pid) {
  auto p = session::factsAndPlan(r, bin, pid, nullptr);
  if (!p) return p.failure();
  return std::move(p->facts);
}

Result<Plan> plan(const ProbeRequest& r, const GoBinary& bin, std::optional<pid_t> pid, TargetFacts* factsOut) {
  auto p = session::factsAndPlan(r, bin, pid, nullptr);
  if (!p) return p.failure();
  if (factsOut) *factsOut = p->facts;
  return std::move(p->plan);
}

Result<Plan> plan(const ProbeRequest& r, TracedTarget& target, TargetFacts* factsOut) {
  target.prepared().reset();  // a plan made again: what the last one left goes first
  auto p = session::factsAndPlan(r, target.binary(), r.target.pid, &target.prepared());
  if (!p) return p.failure();
  if (factsOut) *factsOut = p->facts;
  return std::move(p->plan);
}

Result<Plan> plan(const ProbeRequest& r, TargetFacts* factsOut) {
  Result<Target> t = fail(ErrorKind::Usage, std::string(actionName(r.action)) + ": give exactly one target: -p PID, -c 'CMD ARGS' or -b BINARY");
  std::optional<pid_t> pid;
  const int given = r.target.pid.has_value() + r.target.command.has_value() + r.target.binary.has_value();
  if (given != 1) {
  } else if (r.target.pid) {
    t = openProcessTarget(*r.target.pid);
    pid = r.target.pid;
  } else if (r.target.binary) {
    t = openBinaryTarget(*r.target.binary);
  } else if (r.target.command) {
    auto argv = splitCommand(*r.target.command);
    auto program = argv.empty() ? std::nullopt : resolveProgram(argv[0]);
    if (!program) return fail(ErrorKind::NotFound, "-c: no such program: " + (argv.empty() ? std::string() : argv[0]));
    t = openBinaryTarget(*program);
  }
  if (!t) return fail(t.error());
  return plan(r, *t->binary, pid, factsOut);
}

}  // namespace goscope::api
