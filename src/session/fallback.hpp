// When a planned path fails, may the other path serve the request? The one
// place that decides it, for every subcommand: only for the path's own kind
// of failure (dlv missing or failing, a Go release outside Delve's window,
// ptrace refused; a direct read that cannot lay a value out), only when the
// plan names a fallback, and never under a forced --strategy, which is
// honoured or refused, never changed.
#pragma once

#include <functional>
#include <string>

#include "probe/probe_request.hpp"
#include "strategy/strategy.hpp"
#include "util/result.hpp"

namespace goscope::session {

// Lines goscope says on stderr while it works (a fallback, a plan).
using Notice = std::function<void(const std::string&)>;

// True when `why` is `failed`'s own and `plan` allows its fallback.
bool mayFallBack(const ProbeRequest& request, const Plan& plan, Backend failed, const Error& why);

// "the delve path failed (dlv: ...); falling back to bpf"
std::string fallbackNotice(Backend from, Backend to, const Error& why);

// Runs `attempt` on the planned path, and on the fallback when mayFallBack
// says so (telling `notice`).
template <class T>
Result<T> withFallback(const ProbeRequest& request, const Plan& plan, const Notice& notice,
                       const std::function<Result<T>(Backend)>& attempt) {
  Result<T> first = attempt(plan.backend);
  if (first || !mayFallBack(request, plan, plan.backend, first.error())) return first;
  if (notice) notice(fallbackNotice(plan.backend, *plan.fallback, first.error()));
  return attempt(*plan.fallback);
}

}  // namespace goscope::session
