// Event sessions: the calls of the functions a request names, one Call each,
// delivered to a sink as they happen — on the BPF path (probes at the entry
// and the RETs; the process never stops) or on the Delve path (a breakpoint
// per function; every hit stops the process). `goscope trace` and `goscope
// break` are an event session plus printing; so is examples/slow_calls.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session/call.hpp"
#include "session/delve_work.hpp"
#include "session/fallback.hpp"
#include "session/session_cost.hpp"
#include "process/traced_target.hpp"
#include "probe/probe_request.hpp"
#include "strategy/strategy.hpp"
#include "util/result.hpp"

namespace goscope::session {

enum class EventEnd { Duration, Signal, TargetExited, TargetExeced, HitCount, OutputClosed, Failed, OverBudget };
const char* describe(EventEnd e);

// How a session went, for the lines printed after it.
struct EventTotals {
  Backend path = Backend::Bpf;
  EventEnd end = EventEnd::Signal;
  long long calls = 0;  // delivered to the sink
  double activeS = 0;   // from the start of the run to its end
  bool targetIsLaunched = false;  // -c: the command's end is the normal end
  bool targetIsBinaryWide = false;
  std::string target;   // "PID 123 (/path)"
  std::string execedTo; // EventEnd::TargetExeced: the program it exec'd
  std::optional<int> commandStatus;  // -c, EventEnd::TargetExited: the command's exit status (128+N: signal N)
  pid_t pid = 0;

  // BPF path.
  uint64_t lostRingFull = 0, lostBusy = 0;  // events the kernel dropped
  size_t unfinished = 0;                    // calls that had not returned when the session ended
  uint64_t unmatched = 0;                   // returns of calls already running at attach
  // A -c command that exited before its load address was read, and no
  // entry event that gave it: events decoded without it (their interface
  // types and stack frames unnamed).
  uint64_t decodedWithoutBias = 0;
  size_t detachedPoints = 0;
  double detachMs = 0;

  uint64_t sampledOut = 0;                  // calls whose events the overhead bound's sampling left out
  uint64_t hiddenCalls = 0;                 // calls of processes this user may not ptrace, dropped (docs/security.md)

  // Delve path: how long the target was stopped, and the session's costs.
  DelveCosts costs;
  // Every path: what the session cost the target, and what the bound did.
  SessionCost cost;
  std::optional<Error> failed;  // what ended the session early (already phrased for the user)
  std::optional<Error> detachFailed;
};

class EventSession {
 public:
  virtual ~EventSession() = default;
  virtual Backend path() const = 0;
  // One line for stderr: what was attached where, how fast, how to stop.
  virtual std::string announcement() const = 0;
  // Not fully privileged: one line for stderr before the announcement of a
  // -b session on BPF (only this user's processes are traced); else empty.
  virtual std::string accessNotice() const { return ""; }
  // For --explain: where the types of each traced function's arguments come
  // from ("types from dwarf", ... as list --json's signature_from), with the
  // traceback layout and how its words were placed; empty when the path has
  // no choice (Delve reads DWARF).
  virtual std::vector<std::string> argumentSources() const { return {}; }
  // Delivers calls to `sink` (false from the sink: nobody reads any more)
  // until request.maxHits, request.durationS, a stop signal, the target's
  // end or an error; then removes every probe or breakpoint and detaches.
  virtual EventTotals run(const std::function<bool(const Call&)>& sink) = 0;
  // Asks run() to end soon (EventEnd::Signal); safe from another thread.
  virtual void stop() = 0;
  // Told whenever the overhead bound acts (request.maxOverheadPct). Set before run().
  void onBound(BoundCallback callback) { onBound_ = std::move(callback); }
  // Told each time a wait for events ends (at least every 100 ms while the
  // session runs, and between bursts of calls): where a caller that buffers
  // output flushes it, so a line does not wait for the next call. Optional;
  // set before run().
  void onIdle(std::function<void()> callback) { onIdle_ = std::move(callback); }

 protected:
  void bound(const BoundAction& a) const {
    if (onBound_) onBound_(a);
  }
  void idle() const {
    if (onIdle_) onIdle_();
  }

 private:
  BoundCallback onBound_;
  std::function<void()> onIdle_;
};

// Starts the session `plan` chose for `request` (Action::Trace or
// Action::Break) on `target` (from api::openTarget; the binary is not read
// again). When the planned path fails for a reason of its own and the plan
// allows a fallback (auto strategy), the other path is started and `notice`
// gets one line saying so (fallback.hpp).
Result<std::unique_ptr<EventSession>> startEventSession(const ProbeRequest& request, const Plan& plan, TracedTarget target,
                                                        const Notice& notice);

}  // namespace goscope::session
