// Whether a process runs or was stopped by job control (kill -STOP, Ctrl-Z),
// and the one line goscope says when a request would change that.
//
// A Delve session must leave a stopped target stopped: Delve 1.20.2's Detach
// sends SIGCONT to a process it finds in state T, and a breakpoint needs the
// target to run (docs/kernel.md, "A stopped target").
#pragma once

#include <sys/types.h>

#include <string>

#include "util/result.hpp"

namespace goscope {

enum class RunState {
  Running,  // R, S, D, I...: not stopped
  Stopped,  // T: a stop signal (SIGSTOP, SIGTSTP...) stopped it: group-stop
  Traced,   // t: stopped by its tracer (a debugger holds it)
  Gone,     // no such process, or a zombie
};

// From the state letter of /proc/PID/stat (the thread-group leader's).
RunState runStateOf(pid_t pid);

// "PID 12 is stopped (state T: kill -STOP or Ctrl-Z); sample needs it
// running, and Delve would resume it", with the hint to resume it first.
// BadTarget (exit 4).
Error stoppedTargetRefusal(pid_t pid, const std::string& action);

// "PID 12 is stopped (state T: kill -STOP or Ctrl-Z)": the first half of the
// refusal, for plans and notes.
std::string stoppedTargetFact(pid_t pid);

}  // namespace goscope
