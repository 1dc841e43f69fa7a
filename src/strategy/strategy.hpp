// The strategy layer: a pure function from a request and the facts about its
// target to a Plan — which backend, and every reason behind the choice — so
// `--explain` can print it and tests can cover the whole table.
//
// Capability first: writes, Go expressions, locals and conditions need
// Delve; stripped binaries, counts and latency need BPF. Then rate: a
// per-hit capture both can do — float arguments included, which only Delve
// reads but BPF serves as <unavailable> — goes to Delve only when the rate
// times Delve's per-hit cost on this host fits the overhead budget.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/probe_request.hpp"
#include "strategy/host_costs.hpp"
#include "util/result.hpp"

namespace goscope {

enum class Backend { Bpf, Delve, DirectRead };
const char* backendName(Backend b);

struct TargetFacts {
  bool hasDwarf = false;
  // The DWARF is in a separate debug file (this path), not in the executable:
  // BPF and direct reads use it, Delve cannot (dlv reads the executable's own).
  std::string separateDebugFile;
  std::string goVersion;           // "go1.19.8"; empty when unknown
  bool delveAcceptsGoVersion = true;
  std::string delveWindow;         // "Delve 1.20.2 reads Go 1.18 to 1.20"; empty when unknown
  // Which dlv and why (backend/delve/delve_finder.hpp): "Delve 1.24.0
  // (PATH, the toolchain cache) reads Go 1.22 to 1.24, which covers
  // go1.24.4"; empty when Delve's facts were not asked.
  std::string delveChoice;
  std::string delveFetchHint;      // when none covers the target: which Delve would, and how to get it
  bool dlvInstalled = true;
  bool runningProcess = true;      // -p: Delve attaches to one running process (-c and -b are BPF's)
  bool bpfPrivileges = true;       // CAP_BPF + CAP_PERFMON (or root)
  bool ptracePrivileges = true;    // needed by Delve and by direct reads
  std::string ptraceRefusal;       // why not, when known ("Delve needs CAP_SYS_PTRACE to attach to PID 12 ...")
  std::string delveBlockedBy;      // e.g. "PID 12 is already traced by PID 34 (gdb)": Delve cannot attach now
  std::string delveBlockedHint;    // what to do about it
  // -p: the target is stopped by job control (state T: kill -STOP): its PID,
  // else 0. A Delve breakpoint or sample would resume it; BPF, a direct read
  // and Delve's read and set leave it stopped.
  pid_t stoppedPid = 0;
  bool floatArguments = false;     // a matched function takes or returns floats
  bool readsArePlainVariables = false;  // read: every expression is a package variable (a field, len, cap) of known address and type
  std::string directReadRefusal;        // read: why not (the first expression that needs Delve)
  size_t matchedFunctions = 1;          // trace/break: how many functions the locations match
  bool locationsAreFunctions = true;    // break: FUNC names a function (not file:line, not an address)
  std::optional<double> measuredRatePerS;  // from a short in-kernel count
  // What a hit costs here, by placement (calibrated, or the documented defaults).
  HostCosts costs;
  // The dearest entry placement among the matched functions (trace/break).
  Placement entryPlacement = Placement::Emulated;
};

// Plain data: what the strategy decided and why. What planning leaves
// attached for the session (the rate probe's engine) goes with the target
// (TracedTarget::prepared), not with the plan.
struct Plan {
  Backend backend = Backend::Bpf;
  std::vector<std::string> reasons;  // in the order they were weighed
  // A backend that can also serve the request, tried when the chosen one
  // fails for a reason of its own (e.g. Delve cannot attach).
  std::optional<Backend> fallback;
  // Where a session of this plan goes when it runs over its overhead budget
  // (a Delve trace or break: to BPF, which serves the same request at
  // microseconds a hit); none: it stays, and the bound warns or ends it.
  // Decided here, as every path: the executor only carries it out.
  std::optional<Backend> overBudget;
  // The hit rate would decide (it is unknown): measure it and plan again.
  bool needsRate = false;
  // With needsRate: the rate above which Delve's stops exceed the budget
  // (the rate probe may stop once it is clearly above or below it).
  double delveRateLimitPerS = 0;
  // The hit rate the plan was made with: measured by the rate probe, or the
  // user's --expect-rate; none when neither was needed. The BPF event
  // session sizes its ring buffer from it.
  std::optional<double> ratePerS;
};

// The most breakpoints a Delve plan sets (one per matched function): beyond
// it, every call of that many functions stopping the process is never cheap.
constexpr size_t kDelveMaxBreakpoints = 16;

// Errors (Usage) when no backend can serve the request, or the one forced by
// --strategy cannot; the message says why and the hint what would work.
Result<Plan> planRequest(const ProbeRequest& request, const TargetFacts& facts);

std::string explainPlan(const Plan& plan);
// The facts the plan was made from, and (a second line) the per-hit costs it weighed.
std::string explainFacts(const TargetFacts& facts);

}  // namespace goscope
