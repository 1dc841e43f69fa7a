// The guardian: a small process between goscope and dlv that detaches
// carefully if goscope dies without doing it.
//
// Why: when its client disconnects or it gets SIGTERM, dlv 1.20.2 halts a
// running target and detaches. If a breakpoint is being hit all the time (a
// conditional breakpoint on a hot function keeps the target in Delve's
// internal stops), that halt's SIGTRAP often reaches the target while it is
// stopped, stays pending, and kills it right after the detach: 6 of 8 runs
// (tests/runtime/test_delve_session.cpp). So goscope's death must not be
// what dlv sees. The guardian is dlv's parent (dlv's PR_SET_PDEATHSIG points
// at it), holds a second handle on goscope's connection to dlv, and notices
// goscope's death as EOF on a control socket (any death, any thread). Then,
// on that connection, it does what DelveSession::detach() does: halt only a
// running target, drain a pending SIGTRAP, Detach with Kill=false.
//
// If dlv dies without detaching (SIGKILL, OOM, its guardian's death), the
// kernel releases the target with Delve's int3 bytes in its code, possibly
// with a SIGTRAP about to be delivered or a thread left one byte into an
// instruction. goscope tells the guardian every such address with the file's
// byte there, the target's SIGTRAP handler and dlv's tracer thread; the
// guardian then forks a sentinel (gs-sentinel) that traces that one thread of
// dlv with PTRACE_O_TRACEEXIT. A dying dlv's tracer thread stops there before
// the kernel lets the target go, and the sentinel makes the release safe
// (process/tracer_release.hpp; docs/delve.md, "When dlv dies"). The sentinel is
// a process of its own so that it survives the guardian: dlv dies with its
// guardian (PR_SET_PDEATHSIG SIGKILL), and the sentinel takes care of that
// death too. Names without "goscope" (gs-guardian, gs-sentinel), so that
// `pkill goscope` leaves them alive to do their job.
//
// It watches the target as well: a target that dies while dlv holds it is a
// zombie that only its tracer can release; the guardian SIGKILLs dlv at once,
// so that the target's parent can reap it.
//
// It runs in the child of a fork() that may come from a threaded process, so
// it uses raw system calls and fixed buffers only: no allocation, no locks.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "process/text_restore.hpp"
#include "process/tracer_release.hpp"

namespace goscope::delve::guardian {

// Control messages, one per SOCK_SEQPACKET packet.
enum Message : char {
  kDlvPid = 'P',      // guardian -> goscope: pid_t of dlv
  kSpawnFailed = 'E', // guardian -> goscope: int errno of fork()
  kConnection = 'S',  // goscope -> guardian: the connection to dlv, as SCM_RIGHTS
  kBreakpoint = 'B',  // goscope -> guardian: int64_t id of a breakpoint it created
  kTracer = 'T',      // goscope -> guardian: pid_t, dlv's tracer thread (the target's TracerPid)
  kPatch = 'A',       // goscope -> guardian: uint64_t address of a Delve int3, uint8_t the file's byte there
  kHandler = 'H',     // goscope -> guardian: uint64_t entry of the target's SIGTRAP handler (runtime.sigtramp)
  kStandDown = 'Q',   // goscope -> guardian: detached cleanly; reap dlv and exit
};
// EOF on the control socket means goscope is gone (or handed over on purpose).

// Everything the guardian needs, built before fork().
struct Plan {
  pid_t target = -1;
  const char* dlvPath = nullptr;
  char* const* dlvArgv = nullptr;
  char* const* envp = nullptr;
  int stdoutFd = -1;  // dlv's stdout and stderr (memfds goscope reads)
  int stderrFd = -1;
  int nullFd = -1;
  int controlFd = -1;  // the guardian's end of the control socketpair
  int reportFd = -1;   // a memfd: the sentinel writes its ReleaseReport there (goscope reads it)
  // The target's executable when goscope started (0: unknown). If it differs
  // when goscope is gone, the target exec'd: dlv is SIGKILLed, not told to
  // detach, so it cannot restore the old program's bytes into the new one.
  uint64_t exeDev = 0, exeIno = 0;
  // The target was stopped (kill -STOP) before goscope came: a stop the
  // guardian makes is undone with SIGCONT only when this is false, and when
  // goscope dies the guardian leaves the target stopped (dlv SIGKILLed after
  // the bytes are written back, not told to Detach, which SIGCONTs it).
  bool stoppedBefore = false;
};

// Runs in the forked child; never returns.
[[noreturn]] void run(const Plan& plan);

// The process name the guardian gives itself (prctl PR_SET_NAME): without
// "goscope" in it, so that `pkill goscope` does not take it too.
inline constexpr char kProcessName[] = "gs-guardian";
inline constexpr char kSentinelName[] = "gs-sentinel";

// What the sentinel leaves in Plan::reportFd, at offset 0, once done.
struct SentinelRecord {
  uint32_t magic = 0;  // kSentinelDone
  uint32_t held = 0;   // 1: dlv's tracer thread died holding the target (0: it had let go)
  ReleaseReport report;
};
inline constexpr uint32_t kSentinelDone = 0x53454e54;

}  // namespace goscope::delve::guardian
