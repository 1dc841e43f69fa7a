#include "cli/command.hpp"

namespace goscope::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"list", "list probe-able functions of a Go binary or process", runList},
      {"info", "what goscope knows about a Go binary or process", runInfo},
      {"count", "count calls of matching functions (BPF, in-kernel)", runCount},
      {"latency", "per-goroutine latency histograms of matching functions (BPF)", runLatency},
      {"overhead", "what each way of probing costs the target, side by side", runOverhead},
  };
  return table;
}

}  // namespace goscope::cli
