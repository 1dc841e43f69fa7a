#include "cli/command.hpp"

namespace goscope::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"list", "list probe-able functions of a Go binary or process", runList},
      {"info", "what goscope knows about a Go binary or process", runInfo},
      {"count", "count calls of matching functions (BPF, in-kernel)", runCount},
      {"latency", "per-goroutine latency histograms of matching functions (BPF)", runLatency},
      {"trace", "one line per call with arguments and results (BPF)", runTrace},
      {"overhead", "what each way of probing costs the target, side by side", runOverhead},
      {"read", "read globals or expressions once (Delve: attach, evaluate, detach)", runRead},
      {"sample", "sample expressions at a function once per interval (Delve)", runSample},
      {"break", "capture arguments, locals, stacks at every hit of a breakpoint (Delve)", runBreak},
      {"set", "write a variable of a running program (Delve, needs --allow-write)", runSet},
      {"doctor", "find (and --fix) int3 bytes a dead debugger left in a process's code", runDoctor},
      {"top", "a live full-screen view of calls/s, totals and (-L) latency per function, in a terminal", runTop},
      {"mcp", "serve goscope's tools to an agent over the Model Context Protocol (stdio), under a budget", runMcp},
      {"calibrate", "measure again what a probe hit costs on this host (the figures every plan uses)", runCalibrate},
  };
  return table;
}

}  // namespace goscope::cli
