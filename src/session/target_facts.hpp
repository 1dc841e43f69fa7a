// The facts about a request's target that the strategy layer weighs, and
// the plan made from them: found out as cheaply as each fact allows, the
// hit rate (the one fact that costs a probe) measured only when it decides
// between the paths (target_facts.cpp). api::plan and api::gatherFacts
// are this, for a target opened or named.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>

#include "binary/go_binary.hpp"
#include "probe/probe_request.hpp"
#include "strategy/strategy.hpp"
#include "util/result.hpp"

namespace goscope {
struct PreparedPath;
}

namespace goscope::session {

// The plan from the facts that cost nothing and, only when the hit rate is
// what decides between the paths (a per-hit capture both can serve, on a
// running process, with no --expect-rate), the rate measured by a short
// in-kernel count and the plan made again with it. The planner runs once,
// or twice when a measured rate added a fact.
struct Planned {
  TargetFacts facts;
  Result<Plan> plan = fail(ErrorKind::Internal, "not planned");
};

// keep: where a BPF plan's prepared engine goes (nullptr: detached and
// released here, whatever the plan).
Result<Planned> factsAndPlan(const ProbeRequest& request, const GoBinary& binary, std::optional<pid_t> pid,
                             std::shared_ptr<PreparedPath>* keep);

}  // namespace goscope::session
