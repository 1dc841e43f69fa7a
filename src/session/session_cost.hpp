// What a session cost the program it observed, told at its end on every
// path: CPU time the probes took from it (BPF: hits by placement x the
// host's calibrated per-hit cost, plus the BPF program's own measured run
// time), the time it was stopped (Delve: measured by the kernel's scheduler
// events), the peak hit rate, and whatever the overhead bound did.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace goscope::session {

struct SessionCost {
  double elapsedS = 0;
  double cpuMs = 0;          // CPU time taken from the target by the probes (an estimate from measured figures)
  double stoppedMs = 0;      // time the target was stopped (Delve path; 0 on BPF: the process never stops)
  bool stoppedMeasured = false;  // by the kernel's scheduler events; false: goscope's own view, a lower bound
  double stoppedAtHitsMs = 0;    // of stoppedMs, while breakpoints were hit (attach and detach aside)
  double peakRate = 0;       // hits per second, the highest one-second window
  std::string peakFunction;  // where that peak was
  double budgetPct = 1;      // --max-overhead
  bool enforced = false;     // --max-overhead given: the bound acted, not only warned
  std::string figures;       // where the per-hit figures come from
  std::vector<std::string> actions;  // what the bound did, in order ("sampled main.hot 1 in 8 from 2.1 s", ...)
  // BPF, not fully privileged: calls of other users' processes dropped in
  // the kernel, not counted (docs/security.md). JSON "hidden_calls" when > 0.
  uint64_t hiddenCalls = 0;
  // BPF with --filter: calls whose arguments failed it, dropped in the kernel
  // before anything of them was counted or sent. JSON "filtered_out".
  std::optional<uint64_t> filteredOut;
  // BPF event sessions (trace): records the kernel wrote to the ring buffer,
  // an entry and a return a call. JSON "events_sent".
  std::optional<uint64_t> eventsSent;
  // BPF: how long taking the probes off took, once the session had ended
  // (an RCU grace period per link: seconds on a loaded machine). It comes
  // after the results, never before them. JSON "detach_ms".
  std::optional<double> detachMs;

  // One target process: the CPU time it used in the session, all threads
  // (JSON "target_cpu_ms"), and whether the estimate was more and cpuMs is
  // that clock's figure instead ("capped"): the host's per-hit figures
  // priced these probes above what they can have cost here.
  std::optional<double> targetCpuMs;
  // Any process running the binary (-b): no clock of one process, and the
  // bound is what every online CPU could run in the session (JSON
  // "machine_cpu_ms"); `capped` when the estimate was more.
  std::optional<double> machineCpuMs;
  int machineCpus = 0;
  bool capped = false;
  double estimateCpuMs = 0;  // the estimate before the cap (said when capped)

  // The probes' share of the target's time, in % of one CPU.
  double sharePct() const { return elapsedS > 0 ? (cpuMs + stoppedMs) / (elapsedS * 10) : 0; }
};

// What the overhead bound did, when it did it — told on stderr and in the
// JSON stream as it happens.
struct BoundAction {
  enum class Kind { Warned, Dropped, Sampled, Moved };
  Kind kind = Kind::Warned;
  double elapsedS = 0;
  std::string func;          // the probe acted on (Dropped, Sampled); empty for the session as a whole
  uint64_t count = 0;        // Dropped: its count when it was dropped
  uint32_t sampleEvery = 0;  // Sampled: one call in N has its events
  double sharePct = 0;       // the share of the target's time measured over the last second
  double budgetPct = 0;
  std::string text;          // the sentence for people
};
const char* kindName(BoundAction::Kind k);
using BoundCallback = std::function<void(const BoundAction&)>;

// One line for people: "cost to the target: ~12 ms of CPU in 2.0 s (0.6%, budget 1%), ..."
std::string describe(const SessionCost& c);

}  // namespace goscope::session
