// Writing a live process's code back to what its executable file holds, as
// the last line of defence when a debugger died with its int3 bytes still in
// place (the next hit kills the process with SIGTRAP: nobody traces it any
// more). Used by the Delve guardian right after dlv dies, by goscope when it
// outlives both, and by `goscope doctor --fix`.
//
// Async-signal-safe: system calls and fixed buffers only, no allocation (the
// guardian is the child of a fork() from a threaded process).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace goscope {

// One byte to put back: at runtime address `addr`, write `original` (the
// executable file's byte) if the process's memory holds `expected` (0xCC for
// a debugger's int3). A byte that holds anything else is left alone.
struct TextPatch {
  uint64_t addr = 0;
  uint8_t original = 0;
  uint8_t expected = 0xCC;
};

struct TextRestoreReport {
  int found = 0;          // patches whose address held `expected`
  int restored = 0;       // ... written back (and read back equal)
  bool stopped = false;   // the process was SIGSTOPped for the writes
  bool resumed = false;   // ... and SIGCONTed afterwards
  bool execed = false;    // it runs another executable: nothing written
  bool gone = false;      // no such process (or /proc/PID/mem not writable)
};

// If any patch's address holds its `expected` byte: stops the process with
// SIGSTOP unless it is stopped already (waits, up to 200 ms, until every
// thread is), writes each such byte through /proc/PID/mem (which may write
// read-only text), then SIGCONTs it unless it was stopped before this call or
// `stoppedBefore` says the user had stopped it. When exeIno is not 0 and
// /proc/PID/exe is no longer that file (the process exec'd), writes nothing.
//
// stopFirst=false writes at once, without stopping the process first: for
// the moment right after a debugger died, when the race is with the next
// hit and waiting for every thread to stop costs milliseconds (a single
// byte is written, 0xCC -> the instruction's first byte: a thread fetches
// one or the other). `memFd`, when >= 0, is an open /proc/PID/mem (O_RDWR)
// to use instead of opening one.
TextRestoreReport restoreText(pid_t pid, const TextPatch* patches, int count, bool stoppedBefore, uint64_t exeDev,
                              uint64_t exeIno, bool stopFirst = true, int memFd = -1);

// State T (stopped) or t (stopped by a tracer) in /proc/PID/stat.
bool processStopped(pid_t pid);

}  // namespace goscope
