// StopWatch: the time a process spends stopped by its tracer (ptrace stops:
// Delve's breakpoint hits, its halts, the stops for signals it passes on),
// measured by the kernel's scheduler events (bpf/stopwatch.bpf.c) rather
// than from the debugger's replies, which miss the stop before each reply
// and the one after each continue. Needs BPF privileges and BTF.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "util/result.hpp"

struct stopwatch_bpf;

namespace goscope::bpf {

class StopWatch {
 public:
  static Result<std::unique_ptr<StopWatch>> start(pid_t tgid);
  ~StopWatch();
  StopWatch(const StopWatch&) = delete;
  StopWatch& operator=(const StopWatch&) = delete;

  // Some thread stopped, so far (a stop in progress included).
  double stoppedMs() const;
  // The threads at a breakpoint (or stepping over one) stopped, so far, each
  // until it ran again: what the code calling the probed function lost.
  double hitStoppedMs() const;
  uint64_t stops() const;

 private:
  StopWatch() = default;
  stopwatch_bpf* skel_ = nullptr;
};

}  // namespace goscope::bpf
