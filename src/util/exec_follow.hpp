// Following a wrapper to the program it runs (`-c ./run.sh`, `-c 'sh -c
// "./server"'`): goscope seizes the command with ptrace before it execs,
// follows its forks, clones and execs, and stops at the first exec of a
// program the caller accepts (a Go program). That process is held in its
// exec stop — the new image mapped, not one instruction of it run — so
// probes go in before its first instruction; every other process of the
// command is let go at once and runs untraced. Why ptrace and not parsing
// the script: docs/reliability.md, "-c through a wrapper".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

#include "util/result.hpp"

namespace goscope {

// A process held in its exec stop under ptrace. release() (or the
// destructor) lets it run; if goscope dies first, the kernel detaches it and
// it runs (unprobed): it is never left stopped.
class HeldExec {
 public:
  HeldExec() = default;
  HeldExec(pid_t pid, std::string exe) : pid_(pid), exe_(std::move(exe)) {}
  HeldExec(HeldExec&& o) noexcept : pid_(std::exchange(o.pid_, -1)), exe_(std::move(o.exe_)) {}
  HeldExec& operator=(HeldExec&& o) noexcept;
  ~HeldExec() { release(); }

  pid_t pid() const { return pid_; }
  const std::string& exe() const { return exe_; }  // the program it exec'd (absolute)
  void release();

 private:
  pid_t pid_ = -1;
  std::string exe_;
};

// `wrapper` is goscope's own child, held before its exec; `letGo` lets it
// exec (LaunchedChild::release). Follows it and its descendants until one
// execs a program `accept(exe)` takes; returns it held. `wrapperStatus` gets
// the wrapper's exit status if it ends first (it was reaped here).
// Errors: BadTarget (the command ended without running such a program, or
// ran none within `timeout`), External (ptrace refused).
Result<HeldExec> followToProgram(pid_t wrapper, const std::function<Result<void>()>& letGo,
                                 const std::function<bool(const std::string& exe)>& accept,
                                 std::chrono::milliseconds timeout, int* wrapperStatus);

}  // namespace goscope
