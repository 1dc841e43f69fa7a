// Letting a process go from a tracer that is dying with it held, so that the
// process takes nothing of the tracer's with it: no int3 byte, no SIGTRAP, no
// thread left one byte into an instruction or with the trap flag set, no
// group stop (docs/delve.md, "When dlv dies").
//
// The caller traces the dying tracer's ptrace thread with PTRACE_O_TRACEEXIT:
// that thread stops at PTRACE_EVENT_EXIT, early in do_exit(), before
// exit_ptrace() releases its tracees. While it is held there:
//   hold()    writes the file's bytes back at every known int3, notes every
//             thread of the target (its state and the signal its stop will
//             deliver), and queues a SIGSTOP to each thread, so that each one
//             group-stops before it runs a single user instruction;
// then the caller lets the tracer thread go (PTRACE_DETACH) and calls
//   finish()  which waits for the group stop, takes each thread (PTRACE_SEIZE),
//             undoes a SIGTRAP handler frame the kernel built for a stop the
//             tracer never collected (the handler has not run: its return is
//             made by hand, through the frame's own sigreturn), moves a thread
//             left just past an int3 back onto it, clears a trap flag left by a
//             single-step, consumes a pending SIGTRAP (a debugger's halt) as
//             the tracer, lets every thread go and SIGCONTs the process.
//
// Async-signal-safe: system calls and fixed buffers only (it runs in a fork of
// a threaded process). x86-64 only.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "process/text_restore.hpp"

namespace goscope {

// What the caller knows about the target.
struct ReleaseTarget {
  pid_t pid = -1;
  const TextPatch* patches = nullptr;  // every address the tracer wrote an int3 to
  int patchCount = 0;
  // Entry addresses of the target's signal handlers for SIGTRAP (a Go
  // program: runtime.sigtramp, runtime.cgoSigtramp): a thread stopped exactly
  // there with a SIGTRAP frame on its stack has not run its handler yet.
  const uint64_t* handlers = nullptr;
  int handlerCount = 0;
  bool stoppedBefore = false;      // stopped by the user before: leave it stopped
  uint64_t exeDev = 0, exeIno = 0;  // its executable; another one (exec): nothing written
  int memFd = -1;                  // /proc/PID/mem (O_RDWR) opened earlier, or -1
};

// What happened, for the session's error message and the tests.
struct ReleaseReport {
  int threads = 0;          // threads of the target at the hold
  int trapStops = 0;        // ... in a stop that would have delivered SIGTRAP (not collected by the tracer)
  int tracedStops = 0;      // ... in a ptrace stop of any kind
  int bytesFound = 0;       // int3 bytes still in place at the hold
  int bytesRestored = 0;    // ... written back
  int framesUndone = 0;     // SIGTRAP handler frames undone before the handler ran
  int rewound = 0;          // threads moved back from just past an int3 onto it
  int stepFlagsCleared = 0; // trap flags (single-step) cleared
  int ambiguous = 0;        // a thread just past a one-byte instruction that may have run: left as it was
  int trapsDrained = 0;     // pending SIGTRAPs consumed
  int unreleased = 0;       // threads that could not be examined (not stopped in time, seize refused)
  int handlers = 0;         // SIGTRAP handler addresses known
  int examined = 0;         // threads seized and examined after the release
  // The first thread that was in an uncollected SIGTRAP stop, as found after
  // the release: its pc, and the signal number in the frame there (for -v).
  uint64_t trapThreadPc = 0;
  int trapFrameSigno = -1;
  bool execed = false;      // the target runs another program: nothing written, nothing examined
  bool gone = false;        // the target is gone
  bool stopped = false;     // SIGSTOP queued at the hold
  bool resumed = false;     // SIGCONT sent at the end
};

// State carried from hold() to finish().
struct ReleaseState {
  static constexpr int kMaxThreads = 1024;
  pid_t tids[kMaxThreads];
  bool traced[kMaxThreads];     // in a ptrace stop at the hold
  bool trap[kMaxThreads];       // ... that would deliver SIGTRAP
  int count = 0;
  bool heldInt3[256];           // patches[i] held 0xCC at the hold (first 256)
  bool needFinish = false;
};

// While the tracer thread is held at PTRACE_EVENT_EXIT.
void releaseHold(const ReleaseTarget& t, ReleaseState& s, ReleaseReport& r);

// After the tracer thread was let go. Waits up to `timeoutMs` for the group
// stop.
void releaseFinish(const ReleaseTarget& t, ReleaseState& s, ReleaseReport& r, long timeoutMs);

// The target's executable is still (dev, ino) (0, 0: unknown, taken as yes).
bool sameExecutable(pid_t pid, uint64_t dev, uint64_t ino);

// TracerPid of the process (its leader), -1 when it is gone.
pid_t tracerOf(pid_t pid);

}  // namespace goscope
