// The overhead bound of every session (count, latency, trace and break on
// BPF; trace and break on Delve): the one place that decides what happens
// when the probes have taken more than the budget for a second. The
// measuring is the CostMeter's (cost_meter.hpp): hits priced per hit plus
// the BPF programs' run time, or a Delve session's stops. What a session
// may do about it is its BoundRules, plain data, so the sessions'
// differences are read side by side here rather than in four loops. The
// probes are acted on through BoundProbes (the engine's side:
// EngineProbes, cost_meter_engine.cpp; Delve's hits: delve_event_session.cpp),
// so that the rules are tested without a kernel or a dlv
// (tests/unit/session/test_overhead_bound.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session/cost_meter.hpp"
#include "session/session_cost.hpp"
#include "util/result.hpp"

namespace goscope::bpf {
class Engine;
}

namespace goscope::session {

// What a session's bound does once the budget has been exceeded for a second.
struct BoundRules {
  // Act (sample, drop, move) — --max-overhead given (a Delve session also
  // under auto); else warn once.
  bool enforce = false;
  // Thin the dearest function's events to 1 in N before dropping its probes:
  // trace only. Sampling shrinks the program's work per event, not the trap;
  // count and latency send no events; break's BPF plan is not sampled
  // (it shows each hit).
  bool sampleFirst = false;
  // How many probes one action drops.
  enum class Drop {
    // count, latency: at once, the dearest probes until the estimate fits
    // (CostMeter::dearestToDrop): a count may probe every function of the
    // binary ('*'), where one function a second would take long to come
    // under the budget. Said as "dropped the probe on F ...; the others
    // keep counting".
    UntilWithin,
    // trace, break: the dearest function's probes (entry and returns), one
    // function a second, trace's sampled first and given a second to show
    // it. Said as "dropped the probes on F ...".
    Dearest,
    // Delve: the session is asked to move the probe to BPF (BoundAction
    // Moved), once, when `mayMove`; else a warning. The cost measured is
    // the target's stops (its probe is priced at 0 a hit), said as "the
    // target was stopped N% of the last second at R hits/s".
    MoveToBpf,
  } drop = Drop::Dearest;
  // MoveToBpf: BPF can serve what the Delve session was asked (no
  // expression, local, --cond or location that is not a function).
  bool mayMove = false;
  // The hit counts are of the calls that passed the filter only (count
  // --filter): the calls it refused trapped too, and are priced with them.
  // trace's counts are of every call (its filter only holds back events).
  bool plusFiltered = false;
  // The two rules below differ between count/latency and trace/break with
  // no reason found; kept as they were, so that nothing a user sees changes.
  // A failed drop is told as a warning (count, latency); trace and break
  // retry a second later without a word.
  bool sayFailedDrop = false;
  // The warning's entry in the session's bound actions: "warned at N s"
  // (count, latency) or "warned" (trace, break).
  bool warnedWithTime = false;
};

// The rules of count and latency (`filtered`: --filter given), and of trace
// and break: the one place each session's rules are set.
BoundRules aggregateBoundRules(bool enforce, bool filtered);
BoundRules eventBoundRules(bool enforce, bool isTrace);
BoundRules delveBoundRules(bool enforce, bool mayMove);

// The probes of a session, as the bound acts on them.
class BoundProbes {
 public:
  virtual ~BoundProbes() = default;
  // The hit counts (and the programs' run time) into `meter` at `nowS`, at
  // most every 250 ms unless `force`; true when it sampled.
  virtual bool sample(CostMeter& meter, double nowS, bool force, bool plusFiltered) = 0;
  // Events of probe `id` for one call in `every` from now on.
  virtual Result<void> sampleEvery(uint32_t id, uint32_t every) = 0;
  // Detaches every point of the probes in `ids`; the others keep counting.
  virtual Result<void> drop(const std::vector<uint32_t>& ids) = 0;
  // The calls probe `id` counted so far (0 when they cannot be read).
  virtual uint64_t calls(uint32_t id) const = 0;
};

// BoundProbes on a loaded engine (cost_meter_engine.cpp).
class EngineProbes final : public BoundProbes {
 public:
  explicit EngineProbes(bpf::Engine& engine) : engine_(engine) {}
  bool sample(CostMeter& meter, double nowS, bool force, bool plusFiltered) override;
  Result<void> sampleEvery(uint32_t id, uint32_t every) override;
  Result<void> drop(const std::vector<uint32_t>& ids) override;
  uint64_t calls(uint32_t id) const override;

 private:
  bpf::Engine& engine_;
};

class OverheadBound {
 public:
  // `meter`'s probes by probe id; `rules` as above.
  OverheadBound(std::unique_ptr<CostMeter> meter, BoundRules rules);

  // Samples `probes` into the meter (at most every 250 ms); with `act`,
  // once the budget has been exceeded for a second, warns once or acts as
  // the rules say, telling `tell` each time. Without `act`: the sample
  // alone, now (a session's last, around its detach).
  void govern(BoundProbes& probes, double nowS, bool act, const BoundCallback& tell);

  CostMeter& meter() { return *meter_; }
  const CostMeter& meter() const { return *meter_; }
  const BoundRules& rules() const { return rules_; }
  // When probe `id` was dropped (seconds since the start), and the calls it
  // had counted then; none when it was not.
  std::optional<double> droppedAt(uint32_t id) const { return id < droppedAt_.size() ? droppedAt_[id] : std::nullopt; }
  uint64_t droppedCount(uint32_t id) const { return id < droppedCount_.size() ? droppedCount_[id] : 0; }
  // Events of probe `id` are sampled 1 in this (0: every call).
  uint32_t sampleEvery(uint32_t id) const { return id < sampleEvery_.size() ? sampleEvery_[id] : 0; }

 private:
  void warnOnce(double nowS, const BoundCallback& tell);
  void dropUntilWithin(BoundProbes& probes, double nowS, const BoundCallback& tell);
  void sampleOrDropDearest(BoundProbes& probes, double nowS, const BoundCallback& tell);
  void moveOrWarn(double nowS, const BoundCallback& tell);

  std::unique_ptr<CostMeter> meter_;
  BoundRules rules_;
  bool warned_ = false;
  bool moved_ = false;
  std::vector<std::optional<double>> droppedAt_;  // by probe id
  std::vector<uint64_t> droppedCount_;            // by probe id
  std::vector<uint32_t> sampleEvery_;             // by probe id: 0 = every call
};

}  // namespace goscope::session
