// Which measured per-hit figures a plan uses, given every measure cached for
// this kernel and CPU and the machine's load now. A measure is marked with
// the load average and the online CPUs when it was taken: the same probe
// costs several times more on a loaded machine (docs/overhead.md, "The
// price of a hit on this host"), so a figure is aged and weighed against
// the load now rather than trusted for good. Pure functions: the api layer
// reads the cache, /proc/loadavg and the clock, and calibrates when told.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strategy/host_costs.hpp"

namespace goscope {

// The machine when a measure was taken, or now.
struct LoadMark {
  int64_t atUnixS = 0;  // wall clock, seconds
  double load = 0;      // the 1-minute load average (/proc/loadavg)
  int cpus = 1;         // online CPUs
  double perCpu() const { return cpus > 0 ? load / cpus : load; }
};

// One calibration of the three probe placements.
struct ProbeMeasure {
  double emulatedNs = 0, steppedNs = 0, returnNs = 0;
  LoadMark mark;
};

// One Delve session's stops: stopped time at hits / hits.
struct DelveMeasure {
  double stopNs = 0;
  uint64_t hits = 0;
  double stoppedMs = 0;
  LoadMark mark;
};

// A measure older than this is not used (the kernel, the firmware, the
// machine's neighbours change); the cache keeps at most kMaxMeasures of
// each kind, the newest.
constexpr int64_t kMeasureMaxAgeS = 7 * 24 * 3600;
constexpr size_t kMaxMeasures = 8;
// A measure taken when (1 + load per CPU) was more than this many times
// what it is now is set aside: its figures are those of a busier machine.
constexpr double kLoadRatioSetAside = 2.0;

enum class MeasureVerdict { Usable, TooOld, FromTheFuture, BusierThanNow };

MeasureVerdict judgeMeasure(const LoadMark& taken, const LoadMark& now);

// "at load L on N CPUs, YYYY-MM-DD HH:MM UTC"
std::string describeMark(const LoadMark& m);

struct ProbeChoice {
  // The lowest usable figure of each placement (from one measure or
  // several); empty when no measure is usable: calibrate.
  std::optional<ProbeMeasure> figures;
  size_t usable = 0;
  // Why, in words, for --explain and `goscope calibrate`: which measure
  // gave the figures, and which were set aside and why.
  std::string why;
};
ProbeChoice chooseProbeFigures(const std::vector<ProbeMeasure>& measures, const LoadMark& now);

struct DelveChoice {
  std::optional<DelveMeasure> figure;  // the lowest usable; empty: the default
  std::string why;
};
DelveChoice chooseDelveFigure(const std::vector<DelveMeasure>& measures, const LoadMark& now);

// The measures to keep once `added` is added: none older than
// kMeasureMaxAgeS (nor dated after `now`), at most kMaxMeasures, the newest.
template <typename Measure>
std::vector<Measure> keptMeasures(std::vector<Measure> measures, const Measure& added, const LoadMark& now);

// The figures of `choice` in `costs` (and its source), or `costs` unchanged.
void applyChoice(HostCosts& costs, const ProbeChoice& choice);
void applyChoice(HostCosts& costs, const DelveChoice& choice);

}  // namespace goscope
