// Ctrl-C, SIGTERM and SIGHUP end a session cleanly: the handler only sets a
// flag; the session loop sees it, detaches and prints totals. A second
// signal while detaching is ignored rather than killing goscope half-way.
#pragma once

#include <signal.h>

namespace goscope {

void installStopSignals();
bool stopRequested();
int stopSignal();  // the signal that asked us to stop, 0 if none
void requestStop();

// Called by the handler after it has set the flag, for sessions whose main
// thread may be blocked in a long wait the flag alone cannot end (a Delve
// continue waiting for its breakpoint: DelveSession::interrupt). It runs in
// signal context, so it must be async-signal-safe. nullptr removes it;
// remove it before `arg` dies (StopHookScope does both).
using StopHook = void (*)(void* arg);
void setStopHook(StopHook hook, void* arg);

class StopHookScope {
 public:
  StopHookScope(StopHook hook, void* arg) { setStopHook(hook, arg); }
  ~StopHookScope() { setStopHook(nullptr, nullptr); }
  StopHookScope(const StopHookScope&) = delete;
  StopHookScope& operator=(const StopHookScope&) = delete;
};

// Holds SIGINT, SIGTERM and SIGHUP back for its scope: they stay pending and
// arrive (set the flag) when it ends. For writing results: the handlers are
// installed without SA_RESTART, so a stop signal arriving while a write to a
// full pipe blocks fails that write with EINTR, and the stream drops what
// follows — the final totals of count and latency included, with exit
// status 0 (seen by tests/runtime/test_torture.cpp).
class StopSignalsHeld {
 public:
  StopSignalsHeld();
  ~StopSignalsHeld();
  StopSignalsHeld(const StopSignalsHeld&) = delete;
  StopSignalsHeld& operator=(const StopSignalsHeld&) = delete;

 private:
  sigset_t old_;
};

}  // namespace goscope
