// The live accounting behind every BPF session: from the kernel's per-probe
// hit counts (sampled a few times a second) and the host's per-hit costs it
// knows the share of the target's time the probes take, the peak rate, and
// whether the budget has been exceeded for longer than a second — which is
// when the session's bound (overhead_bound.hpp) acts (--max-overhead given)
// or warns once (not given).
// The facts behind the figures: docs/overhead.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "session/session_cost.hpp"
#include "strategy/host_costs.hpp"
#include "binary/disasm.hpp"

namespace goscope::bpf {
class Engine;
}
namespace goscope {
struct SelectedFunction;
}

namespace goscope::session {

// What one call of a function costs the target: its entry probe's placement,
// and one return when returns are probed (latency, trace): a stepped RET, or
// an emulated hit where a call-sites function's calls end at an instruction
// the kernel emulates (`endsEmulated`).
double perCallNs(const HostCosts& costs, ProbeSite::Kind entry, bool returns, bool endsEmulated = false);

class CostMeter {
 public:
  struct Probe {
    std::string func;
    double perCallNs = 0;  // what one call costs the target: its entry placement, plus a RET when RETs are probed
    // When a call's end is emulated at some of the function's call sites and
    // stepped at others (SelectedFunction::callEndsMixed), the cost is only
    // known as a range: perCallNs is its top, this its bottom; 0 otherwise.
    // The hit counts are per function, not per site, so which ran is unknown.
    double perCallLowNs = 0;
  };
  // `probes` by probe id.
  CostMeter(std::vector<Probe> probes, const HostCosts& costs, double budgetPct, bool enforce);

  // Cumulative hit counts by probe id at `nowS` (seconds since the start);
  // `measuredNs`: what the probes cost so far as measured rather than
  // priced per hit, from 0 at the start: the BPF programs' own run time
  // (bpf_prog_info.run_time_ns), or a Delve session's stops (its probes are
  // priced at 0 a hit); nullopt when not measured (the per-hit figures
  // include a count program). Cheap; call it every ~250 ms.
  void sample(const std::vector<uint64_t>& counts, double nowS, std::optional<uint64_t> measuredNs = std::nullopt);

  // The share of one CPU the probes took over the last window (between the
  // last two samples), in %.
  double recentPct() const { return recentPct_; }
  // Probe `id`'s hits a second over the last window.
  double recentRate(uint32_t id) const { return id < rate_.size() ? rate_[id] : 0; }
  // Over budget for more than a second, now.
  bool overBudget() const;
  // The probe ids, dearest first over the last window, whose removal brings
  // the recent share under the budget (all of them if nothing else does).
  std::vector<uint32_t> dearestToDrop() const;
  // The dearest probe over the last window and its rate.
  std::optional<std::pair<uint32_t, double>> dearest() const;
  // What one call of probe `id` costs in traps alone (its placement).
  double perCallNs(uint32_t id) const { return id < probes_.size() ? probes_[id].perCallNs : 0; }
  // The bottom of the range when the figure above is only its top; 0 when it is the figure.
  double perCallLowNs(uint32_t id) const { return id < probes_.size() ? probes_[id].perCallLowNs : 0; }
  size_t probeCount() const { return probes_.size(); }
  // The function probe `id` is on.
  const std::string& func(uint32_t id) const { return probes_.at(id).func; }
  // The probes run in this process only (-p, -c): every sample also reads
  // its CPU clock, and no window's estimate, nor the total, exceeds what
  // that clock advanced (docs/overhead.md, "An upper bound from the
  // target's own clock"). Call it before the first sample. Once the clock
  // cannot be read (the process exited), nothing more is capped.
  void watchTarget(pid_t pid);
  // The probes run in any process (-b): no window's estimate, nor the
  // total, exceeds what `cpus` CPUs can run in that time.
  void watchMachine(int cpus);
  // Dropped probes cost nothing from now on (their counts stay as they were).
  void dropped(uint32_t probeId);

  // The one-line warning for a session that does not enforce the budget.
  std::string warning() const;

  double lastSampleS() const { return lastT_; }
  // The busiest window of about a second so far, in hits a second.
  double peakRate() const { return peakRate_; }
  const HostCosts& costs() const { return costs_; }
  double budgetPct() const { return budgetPct_; }
  SessionCost totals(double elapsedS) const;
  void addAction(std::string what) { actions_.push_back(std::move(what)); }
  void restartOverBudgetClock() { overSince_.reset(); }

 private:
  std::vector<Probe> probes_;
  HostCosts costs_;
  double budgetPct_;
  bool enforce_;
  std::vector<bool> dropped_;
  std::vector<uint64_t> last_;      // counts at the last sample
  std::vector<double> rate_;        // hits/s over the last window
  double lastT_ = 0;
  double cpuNs_ = 0;                // estimated so far
  pid_t targetPid_ = 0;             // watched by its CPU clock (0: not one process)
  int machineCpus_ = 0;             // -b: the online CPUs, the bound instead (0: none)
  std::optional<uint64_t> targetBase_, targetLast_;  // its clock at watchTarget and at the last sample
  std::optional<uint64_t> measuredLast_;  // sample()'s measuredNs at the last sample
  double recentPct_ = 0;
  // Rates over windows of about a second, as a `-i 1` report's RATE: the
  // peak is the busiest such second, the warning names the last one's rate.
  double windowS_ = 0;                   // length of the current window so far
  std::vector<uint64_t> windowDelta_;    // hits in it, by probe id
  std::vector<double> secondRate_;       // hits/s over the last whole window
  bool haveSecond_ = false;              // a whole window has ended
  std::optional<double> overSince_;
  double peakRate_ = 0;
  std::string peakFunc_;
  std::vector<std::string> actions_;
};

// The CPUs online now (sysconf), at least 1.
int onlineCpus();

// A selected function as the meter prices it: its name and its call's cost,
// a range when its calls end at emulated and at stepped instructions
// (SelectedFunction::callEndsMixed). The one place count, latency, trace and
// break price a function.
CostMeter::Probe meteredProbe(const HostCosts& costs, const SelectedFunction& f, bool returns);

// Reads `engine`'s hit counts and its programs' run time into `meter` at
// `nowS`, at most every 250 ms (`force`: now, e.g. before detaching). True
// when it sampled. Every BPF session's bound starts here.
// `plusFiltered`: the counts are of matching calls only (count --filter):
// the calls the filters dropped trapped too, and are priced with them.
bool sampleEngine(CostMeter& meter, const bpf::Engine& engine, double nowS, bool force = false, bool plusFiltered = false);

}  // namespace goscope::session
