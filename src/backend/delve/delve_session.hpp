// DelveSession: a headless dlv attached to one process, driven so that it
// cannot harm the target. Each guard answers a way Delve 1.20.2 was seen to
// kill or freeze a target (docs/delve.md):
//
//  - single client only (never --accept-multiclient), connected at once;
//  - if goscope dies, a guardian process detaches as carefully as detach()
//    does, on goscope's connection: dlv's own shutdown on SIGTERM or on a
//    lost client kills targets whose breakpoints are being hit (guardian.hpp,
//    dlv_process.hpp); dlv's PR_SET_PDEATHSIG=SIGTERM points at the guardian;
//  - halt is sent only to a running target (a non-blocking State first): a
//    halt to a stopped target leaves a SIGTRAP pending that Detach delivers;
//    a halt that crossed a breakpoint stop anyway is caught before detaching
//    (pending_signals.hpp) and drained;
//  - while the target runs, only State and Command are sent: any other RPC
//    blocks dlv's request loop until the target stops by itself;
//  - every way out detaches with Kill=false: detach(), the destructor, errors;
//  - a target that was stopped (state T: kill -STOP) at the attach stays
//    stopped: resume() refuses, and detach() leaves it without Delve's
//    Detach, which would SIGCONT it (docs/kernel.md, "A stopped target").
//    SIGINT/SIGTERM are the caller's: call interrupt() from the handler (it is
//    async-signal-safe) and detach() afterwards from the controlling thread.
//
// Not thread-safe: one controlling thread calls everything except interrupt().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/delve/dlv_process.hpp"
#include "process/thread_tracers.hpp"
#include "rpc/delve_client.hpp"
#include "binary/file_identity.hpp"
#include "util/result.hpp"

namespace goscope::delve {

struct DelveOptions {
  std::string dlvPath;                 // empty: $GOSCOPE_DLV, then dlv on $PATH
  std::string fetchHint;               // dlvPath's window does not cover the target: which Delve would (delve_finder.hpp)
  std::vector<std::string> extraArgs;  // appended to `dlv attach` (e.g. --check-go-version=false)
  Millis startTimeout{30'000};         // spawn to first reply (DWARF loading of a big binary)
  Millis listenTimeout{10'000};        // spawn to dlv's port line (printed before it attaches)
  Millis callTimeout{10'000};          // each RPC
  Millis detachTimeout{10'000};
  // Refuse (and detach) a target whose Go version this Delve does not
  // support; off with --check-go-version=false in extraArgs, as in dlv.
  bool checkGoVersion = true;
  // The executable goscope analysed (ino 0: not known). A target that runs
  // another by the time dlv has attached (an exec since the analysis) is
  // let go untouched and refused: Delve would set the breakpoints by name
  // in the new program, or at the old program's addresses.
  FileIdentity program;
};

enum class SessionState {
  Stopped,   // attached, target stopped: every RPC is allowed
  Running,   // a continue is in flight: only State and Command may be sent
  Detached,  // detached cleanly, dlv reaped; the target runs on
  Dead,      // dlv or the target went away
};
const char* stateName(SessionState s);

// What to capture at a breakpoint.
struct BreakpointSpec {
  std::string location;                // Delve location: main.doWork, file.go:12, *0x4a0f00
  std::vector<std::string> variables;  // expressions evaluated at each hit
  bool args = false;                   // function arguments
  bool locals = false;                 // local variables
  int stackDepth = 0;                  // frames of stack trace, 0: none
  bool goroutine = false;              // the goroutine's description
  std::string cond;                    // Go expression: stop only when true
  std::string hitCond;                 // "> 10", "% 5 == 0"
  rpc::LoadConfig load = rpc::kDefaultLoadConfig;
};

// One thread stopped at one of our breakpoints.
struct BreakpointHit {
  int64_t breakpointId = 0;
  int64_t goroutineId = 0;
  int64_t threadId = 0;
  std::string function;
  std::string file;
  int64_t line = 0;
  rpc::BreakpointInfo captured;  // variables, arguments, locals, stacktrace, goroutine
};

// Why continueToBreakpoint() returned. No hits and not timed out: the target
// stopped for another reason (one of Delve's own breakpoints, e.g. a panic).
struct StopEvent {
  bool timedOut = false;            // no hit in time: the session halted the target
  std::vector<BreakpointHit> hits;  // several threads can hit at once
  rpc::DebuggerState state;
};

struct DelveTimings {
  double listenMs = 0;     // spawn to dlv's port line
  double attachMs = 0;     // spawn to the first RPC reply: attached, target stopped
  double detachMs = 0;     // detach() to dlv reaped
  double stoppedMs = 0;    // time the target spent stopped under this session
};

class DelveSession {
 public:
  // Spawns dlv, attaches to `pid` and waits for the first reply. The target
  // is stopped when this returns, every thread of it held by dlv: an attach
  // that missed a thread started meanwhile is let go, nothing set, and made
  // again, up to kAttachAttempts times (process/thread_tracers.hpp).
  // Errors: External (no dlv, dlv failed, threads missed every time),
  // BadTarget (stripped binary, Go version), NotFound, Permission.
  static Result<std::unique_ptr<DelveSession>> attach(pid_t pid, const DelveOptions& options = {});
  static constexpr int kAttachAttempts = 3;
  ~DelveSession();  // detach()
  DelveSession(const DelveSession&) = delete;
  DelveSession& operator=(const DelveSession&) = delete;

  SessionState state() const { return state_; }
  pid_t targetPid() const { return pid_; }
  pid_t dlvPid() const { return dlv_ ? dlv_->pid() : -1; }
  pid_t guardianPid() const { return dlv_ ? dlv_->guardianPid() : -1; }
  DelveTimings timings() const;

  // Stops a running target; a no-op when it is already stopped.
  Result<rpc::DebuggerState> halt();
  // Lets a stopped target run; a no-op when it already runs. Refused
  // (BadTarget) when the target was stopped by job control before the
  // attach: the user stopped it, and a breakpoint would resume it.
  Result<void> resume();
  // Continues until one of the breakpoints is hit, at most `timeout`;
  // on timeout halts the target. The target is stopped when this succeeds.
  Result<StopEvent> continueToBreakpoint(Millis timeout);

  // These need a stopped target (Usage error otherwise: sending them while it
  // runs would wedge dlv).
  // `goroutine`: evaluate in that goroutine's innermost frame (-1: the
  // current one).
  Result<rpc::Variable> eval(const std::string& expr, const rpc::LoadConfig& cfg = rpc::kDefaultLoadConfig,
                             int64_t goroutine = -1);
  Result<void> set(const std::string& symbol, const std::string& value);
  Result<rpc::Breakpoint> createBreakpoint(const BreakpointSpec& spec);
  Result<void> clearBreakpoint(int64_t id);
  Result<std::vector<rpc::Breakpoint>> breakpoints();  // ours (id > 0)
  Result<std::vector<rpc::Location>> findLocation(const std::string& loc);
  Result<std::vector<rpc::Variable>> packageVars(const std::string& filter);
  Result<std::vector<rpc::Stackframe>> stacktrace(int64_t goroutineId, int depth);

  // Detaches with Kill=false, halting first if needed, and reaps dlv.
  // Idempotent; a call while one is in progress returns at once.
  // A target stopped before the attach is left stopped: goscope writes
  // Delve's int3 bytes back itself and SIGKILLs dlv, whose death detaches
  // the target back into its group-stop (no user code runs).
  Result<void> detach();

  // The target was stopped (state T) at the attach: the session never
  // resumes it and leaves it stopped.
  bool keepsStopped() const { return keepStopped_; }
  // After detach(): the target is stopped (state T) as it was before.
  bool leftStopped() const { return leftStopped_; }

  // Async-signal-safe: the blocking call in progress (a continue waiting for
  // its breakpoint) returns an error soon; then call detach().
  void interrupt();

 private:
  DelveSession() = default;
  // One attach; `missed`: not allHeld() when dlv did not attach to every
  // thread (the session is stopped, nothing is set; the caller lets it go).
  static Result<std::unique_ptr<DelveSession>> attachOnce(pid_t pid, const DelveOptions& options, ThreadHold& missed);
  Result<void> requireStopped(const char* what) const;
  Result<rpc::DebuggerState> awaitContinue(Millis timeout, bool interruptible);
  Result<rpc::DebuggerState> haltRunning(bool interruptible);
  Result<void> drainPendingTrap();
  Failure lost(const Error& e);  // dlv or the target went away: Dead, with the best reason
  // The target exec'd another program since the attach: Delve's breakpoint
  // addresses (and the bytes it would restore there) belong to the old one.
  bool imageReplaced() const;
  Failure replaced() const;
  // After an exec: dlv is killed rather than told to detach, so it writes
  // nothing into the new program; the kernel detaches it.
  Result<void> abandon();
  // detach() for a target stopped before the attach (see detach()).
  Result<void> leaveStopped();
  void setState(SessionState s);
  // Tells the guardian where Delve's own breakpoints are (their bytes too
  // must go back if dlv dies without detaching).
  void noteDelveOwnBreakpoints();

  pid_t pid_ = -1;
  DelveOptions options_;
  std::unique_ptr<DlvProcess> dlv_;
  std::unique_ptr<rpc::DelveClient> client_;
  SessionState state_ = SessionState::Stopped;
  std::optional<uint64_t> continueId_;  // the Command{continue} in flight
  bool detaching_ = false;
  bool keepStopped_ = false;
  bool leftStopped_ = false;
  std::string image_;  // imageIdentity() at the attach
  DelveTimings timings_;
  std::chrono::steady_clock::time_point stoppedSince_;
};

// One line on what the guardian's sentinel did when dlv died holding `pid`.
std::string describeRelease(pid_t pid, const ReleaseReport& r);

// The threads of `state` stopped at user breakpoints (id > 0).
std::vector<BreakpointHit> hitsOf(const rpc::DebuggerState& state);

}  // namespace goscope::delve
