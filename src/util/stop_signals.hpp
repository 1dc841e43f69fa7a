// Ctrl-C, SIGTERM and SIGHUP end a session cleanly: the handler only sets a
// flag; the session loop sees it, detaches and prints totals. A second
// signal never kills goscope half-way through a detach; it ends the waits
// that may take long (a reader that does not read, the link holder seeing
// a probe's bytes restored), whose work goes on without goscope.
#pragma once

#include <signal.h>

namespace goscope {

void installStopSignals();
bool stopRequested();
int stopSignal();  // the signal that asked us to stop, 0 if none
unsigned stopSignalCount();  // stop signals received so far
void requestStop();

// While a session's probes are attached, a wait on someone else (a write to
// a pipe nobody reads) must give way to the session's end, or the target
// pays for every call until the reader reads (Ctrl-C,
// SIGTERM and -d detach within 0.2 s whatever the backlog). The session
// says when its probes are on and when its -d ends (CLOCK_MONOTONIC seconds,
// 0 = no -d); endPending() is true while they are on and a stop signal came
// or that moment passed. Waits that see it keep their work for later: the
// session detaches first, then finishes writing.
void setProbesOn(double deadlineS);
void setProbesOff();
bool endPending();
// The session's loop has ended (whatever ended it: the target's exit, -n):
// endPending() is true from now until the probes are off, so that printing
// the results never waits for a reader while the detach is still to come.
void setSessionEnding();

// Once the probes are off, what the session still holds is written out
// (everything that happened is shown), waiting for the reader as long as it
// takes. The user says they will not wait with a second stop signal (a
// second Ctrl-C, whenever it came, or the first after -d's end), or with any
// stop signal when no probes were ever on (list, info, a Delve session): the
// writer drops what it holds, counted and said, and goscope ends.
bool dropHeldOutput();
bool probesCameOff();  // a session's probes were on and are off now
// A SIGTERM came: the writer gives a stuck reader a short grace once the
// probes are off, then drops what it holds (a service manager's stop).
bool terminateRequested();
// The stdout writer has begun dropping what it is given (the reader would
// not read and the user would not wait): a session stops producing lines
// nobody will see (a trace's ring read after the detach).
void setOutputDropped();
bool outputDropped();

// Puts the probes-on state for its scope (the session's loop) and takes it
// off when the scope ends, an exception included.
class ProbesOnScope {
 public:
  explicit ProbesOnScope(double deadlineS) { setProbesOn(deadlineS); }
  ~ProbesOnScope() { setProbesOff(); }
  ProbesOnScope(const ProbesOnScope&) = delete;
  ProbesOnScope& operator=(const ProbesOnScope&) = delete;
};

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
