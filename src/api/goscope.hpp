// goscope's C++ API — the one way in for the goscope CLI, the programs under
// examples/, and other tools built on the library (CMake target goscope::goscope).
//
//   1. Describe what you want: a ProbeRequest (probe/probe_request.hpp) —
//      target (-p / -c / -b), locations, what to capture, expected rate,
//      overhead budget, duration, --strategy.
//   2. Plan it: api::plan() finds out the facts the strategy layer weighs —
//      DWARF or stripped, Go version against Delve's window, dlv installed,
//      BPF and ptrace privileges, float arguments, plain variables, and, when
//      the rate decides between Delve and BPF, the hit rate measured by a
//      short in-kernel count — and returns the Plan with every reason.
//   3. Run it: AggregateSession (in-kernel call counts and latency, folded
//      stacks), EventSession (api/event_session.hpp: each call, on BPF or
//      Delve, as an api::Call), read, write and sample (api/delve_work.hpp:
//      a zero-pause direct read, or Delve).
//   4. Print values with renderText / renderJson (value/render.hpp).
//
// Only goscope's own types appear here: no backend header is included, so
// a program on the API (and the CLI) cannot reach libbpf or dlv directly.
// Errors are values (Result<T>, util/result.hpp), never exceptions. Every
// session detaches in its destructor: the traced process is left as it was.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/call.hpp"
#include "api/delve_choice.hpp"
#include "api/delve_work.hpp"
#include "api/memory_sample.hpp"
#include "api/doctor.hpp"
#include "api/event_session.hpp"
#include "api/session_cost.hpp"
#include "probe/latency_stats.hpp"
#include "probe/probe_request.hpp"
#include "api/session_loop.hpp"
#include "process/traced_target.hpp"
#include "strategy/cost_choice.hpp"
#include "strategy/strategy.hpp"
#include "process/target.hpp"
#include "util/result.hpp"
#include "value/render.hpp"

namespace goscope::api {

// ---- the target ---------------------------------------------------------------

// Opens request.target once for the whole command: -p PID (its executable,
// with precise ptrace errors), -b BINARY, or -c 'CMD ARGS' (started, held
// before exec until a session attaches and releases it).
Result<TracedTarget> openTarget(const ProbeRequest& request);

// CAP_BPF and CAP_PERFMON (or root), and a kernel with uprobes: what every
// in-kernel session needs. Permission or External errors say which is missing.
Result<void> checkBpfPrivileges();
// The line said at the end of a BPF session whose kernel side dropped
// `calls` calls of other users' processes (docs/security.md); empty for 0.
std::string hiddenCallsLine(uint64_t calls);

// ---- planning ---------------------------------------------------------------

// What a probe hit costs on this host, by placement, and a Delve stop: the
// figures every plan, cost line and the overhead demo use. The lowest
// recent measure cached in $XDG_CACHE_HOME/goscope/host-costs.json for this
// kernel and CPU that was not taken on a much busier machine than now
// (strategy/cost_choice.hpp); with none, calibrated now (~0.3 s, a note on
// stderr saying why) and added to the cache; the documented defaults
// (saying so in `source`) without BPF privileges or with
// GOSCOPE_NO_CALIBRATION set. `source` and `delveSource` say which measure
// was used and which were set aside.
HostCosts hostCosts();
// Reads the cached figures now, if there are any (never calibrates): on a
// thread beside the analysis, so that hostCosts() after the attach does not
// read /proc/cpuinfo and the cache then (~10 ms before the attach line of
// `count -b buf '*'`).
void preloadHostCosts();
// Measures the probe placements again now and adds the measure to the
// cache (the earlier ones and the Delve measures stay); returns the figures
// plans use from now on: the lowest usable measure, which may be an
// earlier one taken at a lower load. Fails without BPF privileges or when
// the measure is refused.
Result<HostCosts> recalibrate();
// The measure recalibrate() (or a first hostCosts()) took in this process.
std::optional<ProbeMeasure> calibratedNow();
// Where the measured figures are cached, in words: "cached in PATH" (with
// why it is not $XDG_CACHE_HOME/goscope when it is a per-user temporary
// directory instead), or "not cached: REASON" when they could not be written.
std::string hostCostsCacheLocation();
// A Delve session measured its stops: `hits` breakpoint hits stopped the
// target `stoppedAtHitsMs` in all. This process uses it from now on; it is
// cached with the load now, for later plans to weigh (docs/overhead.md).
void recordDelveStopCost(uint64_t hits, double stoppedAtHitsMs);

// The facts about `request`'s target that the planner weighs. `binary` is
// the target's executable (already opened by the caller, e.g. from a
// TracedTarget); `pid` the running process, when there is one (the rate is
// measured only then).
Result<TargetFacts> gatherFacts(const ProbeRequest& request, const GoBinary& binary, std::optional<pid_t> pid);

// gatherFacts + planRequest. The overload without a binary opens the target
// itself (the process's executable for -p, the file for -b or -c).
Result<Plan> plan(const ProbeRequest& request, const GoBinary& binary, std::optional<pid_t> pid,
                  TargetFacts* factsOut = nullptr);
Result<Plan> plan(const ProbeRequest& request, TargetFacts* factsOut = nullptr);
// The same for a target the caller opened (openTarget), pid r.target.pid:
// when the rate probe measured the rate and the plan is BPF, the probe's
// engine, its links still attached, is left in target.prepared() for the
// session the target is handed to (api/prepared_engine.hpp); the overloads
// above detach and release it.
Result<Plan> plan(const ProbeRequest& request, TracedTarget& target, TargetFacts* factsOut = nullptr);

// Hits per second of the functions `patterns` match in `pid`, counted in the
// kernel for `windowS` seconds (BPF counters at the cheap placement: the
// process does not stop). The strategy layer's rate probe.
// limitPerS > 0: stop as soon as the rate is clearly above or below it
// (src/strategy/rate_verdict.hpp), after at least 50 ms.
Result<double> measureHitRate(const GoBinary& binary, pid_t pid, const std::vector<Pattern>& patterns, double windowS,
                              double limitPerS = 0);

// ---- count and latency ----------------------------------------------------------

struct FunctionCount {
  std::string func;
  uint64_t count = 0;  // calls since the probes were attached
  // Action::Latency: goroutine-aware latency of the calls (entry and every
  // RET probed, paired by goroutine in the kernel).
  std::optional<LatencyStats> latency;
  // With latency: what the probes themselves add to each measured call (the
  // entry's trap and a RET's), estimated from the host's per-hit figures
  // (docs/overhead.md); 0 when unknown.
  double probeCostNs = 0;
  // When the figure above is only the top of a range (some calls end at an
  // emulated instruction, some at a stepped one): its bottom; else 0.
  double probeCostLowNs = 0;
  // The overhead bound removed its probe this many seconds in: `count` is
  // what it had counted by then.
  std::optional<double> droppedAtS;
};

struct CountSnapshot {
  double elapsedS = 0;                   // since the probes were attached
  std::vector<FunctionCount> functions;  // every selected function, in selection order
  std::optional<int64_t> readValue;      // request.readVariable at its last read (none before the first hit)
  std::string costFigures;               // where the per-hit figures behind probeCostNs come from
  // An interval's reading: how long after its due time it was taken (a
  // loaded machine did not run goscope on time; elapsedS is the true
  // moment), and how many whole intervals before it passed with no reading
  // (folded into this one).
  double intervalLateS = 0;
  int intervalsSkipped = 0;
  // The reading at the session's end (run() returned): how long after -d's
  // deadline it was taken.
  double endLateS = 0;
  // What the probes have cost the target so far, as of the meter's newest
  // sample (it samples every 250 ms; costSoFar->elapsedS is that sample's
  // moment, so a share of it is not diluted by the time since). Each
  // interval report's cost is the difference of two of these. None off the
  // BPF path.
  std::optional<SessionCost> costSoFar;
};

struct Detached {
  size_t points = 0;  // probes removed
  double ms = 0;      // how long removing them took
};

// In-kernel aggregates per function: call counts (Action::Count, with an
// optional per-hit read of a global), latency histograms (Action::Latency)
// and stack counts (capture.stack: trace --folded). `goscope count`,
// `goscope latency` and `goscope trace --folded` are this class plus printing.

class AggregateSession {
 public:
  // Opens the target (for -c: starts it, held before exec), selects the
  // functions request.locations match, loads the BPF programs, attaches, and
  // lets a -c command run. Errors as the CLI reports them.
  static Result<std::unique_ptr<AggregateSession>> start(const ProbeRequest& request);
  // The same on a target the caller has opened already (api::openTarget;
  // request.target is then ignored).
  static Result<std::unique_ptr<AggregateSession>> start(TracedTarget target, const ProbeRequest& request);
  // The same under the plan api::plan() made for `request`: the session runs
  // what it says (counts, latency and stacks are BPF's alone: a plan for
  // another path is refused, Internal).
  static Result<std::unique_ptr<AggregateSession>> start(TracedTarget target, const ProbeRequest& request,
                                                         const Plan& plan);
  ~AggregateSession();
  AggregateSession(const AggregateSession&) = delete;
  AggregateSession& operator=(const AggregateSession&) = delete;

  const TracedTarget& target() const;
  size_t functionCount() const;  // functions probed
  std::optional<std::string> readVariable() const;
  // One line for stderr: what was attached where, how fast, how to stop.
  std::string announcement() const;
  // Not fully privileged: one line for stderr before the announcement of a
  // -b session (only this user's processes are traced); else empty.
  std::string accessNotice() const;
  // Calls of processes this user may not ptrace, dropped in the kernel
  // before they were counted (0 when fully privileged). Final after detach().
  uint64_t hiddenCalls() const;

  // Safe from any thread, also while run() runs on another (an exporter's
  // server takes one per scrape). Once run() has returned, the reading it
  // took as the session ended (-d N: N seconds of calls, however long the
  // detach takes), also after detach().
  Result<CountSnapshot> snapshot() const;
  // With request.capture.stack: how often each distinct stack reached the
  // probes, as folded lines ("main.main;main.run;main.add", root first) —
  // what flame-graph tools read.
  // Hits whose stack could not be recorded are lines of their own, never
  // attributed to a caller alone: "[lost];FUNC" (kLostRoot, then the probed
  // function), or "[lost]" alone when not even the function could be kept,
  // so the folded lines and a flame graph of them show what is missing.
  Result<std::map<std::string, uint64_t>> foldedStacks();
  // Hits whose stack could not be recorded since the start (the [lost]
  // lines' total), and all hits of the stack-counting probes. Valid after
  // foldedStacks().
  uint64_t lostStacks() const;
  uint64_t stackHits() const;
  static constexpr const char* kLostRoot = "[lost]";
  // Hits whose stack was deeper than the kernel records (127 frames): their
  // folded lines start at kCutRoot instead of the real root. Valid after
  // foldedStacks().
  uint64_t cutStacks() const;
  static constexpr const char* kCutRoot = "[cut]";

  // Runs until request.durationS, a stop request (SIGINT/SIGTERM through
  // util/stop_signals, or stop()) or the target's exit; `onInterval` gets a
  // snapshot every request.intervalS (0: never), the last one included when
  // it falls at -d's end (then the same reading as the totals). Time counts
  // from the moment the probes went on.
  EndReason run(const std::function<void(const CountSnapshot&)>& onInterval);
  void stop();

  // Told whenever the overhead bound acts (request.maxOverheadPct): a
  // warning once when not enforced, else each probe dropped.
  void onBound(BoundCallback callback);
  // What the session has cost the target so far (also after detach()).
  SessionCost cost() const;

  // Removes every probe (also done by the destructor).
  Detached detach();

 private:
  struct Impl;
  explicit AggregateSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Its name in the first API (examples written against it keep building).
using CountSession = AggregateSession;

// ---- reads, writes, samples: api/delve_work.hpp ---------------------------------

}  // namespace goscope::api
