// What every Delve-path session shares (break, trace's Delve plan, sample,
// read, set): attaching with checks that give better errors than dlv's own,
// the breakpoint that captures what was asked, the loop that waits for its
// hits, and each hit as an api::Call in goscope's value model. Internal to
// src/session (it speaks the Delve backend's types).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session/call.hpp"
#include "session/delve_work.hpp"
#include "backend/delve/delve_session.hpp"
#include "process/traced_target.hpp"
#include "util/stop_signals.hpp"

namespace goscope::session {

// What a breakpoint captures at each hit.
struct CaptureParts {
  std::vector<std::string> exprs;  // evaluated at each hit
  bool args = false;
  bool locals = false;
  int stack = 0;                          // frames kept, 0: none
  ReadLimits limits = kHitReadLimits;     // how much of each value Delve loads
};

// Delve's LoadConfig for these limits (strings, elements, depth).
rpc::LoadConfig loadConfigOf(const ReadLimits& limits);

// Checks that `pid` is a Go program dlv may ptrace and read (a stripped
// binary gets the BPF hint without starting dlv), then attaches. The target
// is stopped when this returns. `dlv`: --dlv and --dlv-arg. `target`: the
// process as the command opened it already (its binary is not read again).
// `needsRunning`: the session will let the target run (breakpoints,
// samples): a target stopped by job control (state T) is refused before dlv
// starts, since Delve would resume it (read and set leave it stopped).
// Which dlv, and what it is given: --dlv and --dlv-arg.
struct DelveRequest {
  std::vector<std::string> args;
  std::string path;  // empty: $GOSCOPE_DLV, else the one whose window covers the target (delve_finder.hpp)
};
Result<std::unique_ptr<delve::DelveSession>> attachDelve(pid_t pid, const DelveRequest& dlv,
                                                        const TracedTarget* target = nullptr,
                                                        const char* needsRunning = nullptr);

// While the returned scope lives, a stop signal (Ctrl-C, SIGTERM) cuts the
// session's blocking call short (DelveSession::interrupt is async-signal-safe).
StopHookScope interruptOnStop(delve::DelveSession& session);

// The breakpoint that captures `parts` at `location` (Delve's stack depth
// counts callers: N frames need depth N, the extra one is dropped).
delve::BreakpointSpec captureSpec(const std::string& location, const CaptureParts& parts);

// Delve evaluates a breakpoint's expressions at each hit and marks those it
// cannot evaluate unreadable instead of failing: an unknown symbol or a
// syntax error in one of the user's expressions, as an error.
std::optional<Error> captureError(const delve::BreakpointHit& hit);

// Before the first hit: a syntax error in an expression (Delve's parser
// answers the same in any scope). Unknown names are left for the hit to
// judge: they may be FUNC's locals.
std::optional<Error> syntaxError(delve::DelveSession& session, const std::vector<std::string>& exprs);

// One hit as a Call: arguments at the entry (results are not computed yet),
// expressions, locals and stack frames as `parts` asked.
Call callFromHit(const delve::BreakpointHit& hit, const CaptureParts& parts, pid_t pid);

// The breakpoint loop: continue, hand each hit of one of `breakpointIds` to
// `onHit` (false: stop), until `maxHits` (0: no limit), `durationS` (0:
// none), a stop signal (or `*stop`, when given), or an error. `complete`,
// when given, adds to each hit while the target is stopped there (values
// evaluated at the hit) before the first hit's captures are checked.
enum class HitLoopEnd { Count, Duration, Signal, Stopped };
struct HitLoopResult {
  long long hits = 0;
  double activeS = 0;  // from the first continue to the end
  HitLoopEnd end = HitLoopEnd::Signal;
  std::optional<Error> failed;
};
HitLoopResult runHitLoop(delve::DelveSession& session, const std::vector<int64_t>& breakpointIds, long long maxHits,
                         double durationS, const std::function<bool(const delve::BreakpointHit&)>& onHit,
                         const std::atomic<bool>* stop = nullptr,
                         const std::function<delve::BreakpointHit(const delve::BreakpointHit&)>& complete = nullptr);

// Whether two sets of limits are the same (Delve's defaults for a
// breakpoint's expressions, or ones evaluated at each hit instead).
bool sameLimits(const ReadLimits& a, const ReadLimits& b);

double msSince(std::chrono::steady_clock::time_point t0);

}  // namespace goscope::session
