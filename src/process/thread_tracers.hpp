// Whether every thread of a traced process is held by its tracer.
//
// A debugger attaches to a running process one thread at a time, from one
// listing of /proc/PID/task. Delve (1.20 to 1.27) misses threads two ways:
// a thread that a not-yet-attached thread clones after the listing is in no
// list, and PTRACE_O_TRACECLONE cannot catch it, its parent being untraced
// when it cloned; and Delve 1.20 stops attaching at the first listed thread
// that exited before its turn, ignoring the error, so every thread after it
// in the listing's (lexical) order stays untraced. Such a thread runs while
// the debugger believes the process stopped, runs into the debugger's int3
// with nobody to catch it, and can be the thread the kernel hands a halt's
// kill(pid, SIGTRAP): the Go runtime dies of "SIGTRAP: trace trap" either way
// (docs/delve.md, "Threads dlv never attached").
#pragma once

#include <sys/types.h>

#include <vector>

#include "util/result.hpp"

namespace goscope {

struct ThreadHold {
  std::vector<pid_t> untraced;  // threads whose TracerPid is not the leader's (0: none)
  // The thread count (Threads: in /proc/PID/status) moved while the threads
  // were listed, or differs from the listing: something runs.
  bool moving = false;
  bool allHeld() const { return untraced.empty() && !moving; }
};

// Exact for a process whose traced threads are all stopped: only an
// untraced thread can then start or end one, and the count would show it.
// NotFound when the process is gone; Internal when its leader is traced by
// no one.
Result<ThreadHold> threadHold(pid_t pid);

}  // namespace goscope
