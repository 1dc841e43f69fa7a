// Ctrl-C, SIGTERM and SIGHUP end a session cleanly: the handler only sets a
// flag; the session loop sees it, detaches and prints totals. A second
// signal while detaching is ignored rather than killing goscope half-way.
#pragma once

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

}  // namespace goscope
