// session::AggregateSession: in-kernel aggregates per function (call
// counts, latency histograms, folded stacks) and the snapshots read from
// them. Implemented in aggregate_session.cpp; reached by programs on the
// API as api::AggregateSession (api/goscope.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/latency_stats.hpp"
#include "probe/probe_request.hpp"
#include "process/traced_target.hpp"
#include "session/session_cost.hpp"
#include "session/session_loop.hpp"
#include "strategy/strategy.hpp"
#include "util/result.hpp"

namespace goscope::session {

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
  // How long the oldest interval folded in waited for this reading
  // (intervalLateS when none was skipped), and how much of that, at most,
  // was goscope's own work since it last looked at the clock (the last
  // report's reading and printing, a drain of the stacks), not time it was
  // not run (IntervalDue::overdueS, ownS).
  double intervalOverdueS = 0;
  double intervalOwnS = 0;
  // The reading at the session's end (run() returned): how long after -d's
  // deadline it was taken.
  double endLateS = 0;
  double endOwnS = 0;  // of endLateS, at most: goscope's own work, as intervalOwnS
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

}  // namespace goscope::session
