#include "session/overhead_bound.hpp"

#include <algorithm>
#include <cstdio>

namespace goscope::session {

BoundRules aggregateBoundRules(bool enforce, bool filtered) {
  return {.enforce = enforce,
          .sampleFirst = false,
          .drop = BoundRules::Drop::UntilWithin,
          .plusFiltered = filtered,
          .sayFailedDrop = true,
          .warnedWithTime = true};
}

BoundRules eventBoundRules(bool enforce, bool isTrace) {
  return {.enforce = enforce,
          .sampleFirst = isTrace,
          .drop = BoundRules::Drop::Dearest,
          .plusFiltered = false,
          .sayFailedDrop = false,
          .warnedWithTime = false};
}

BoundRules delveBoundRules(bool enforce, bool mayMove) {
  return {.enforce = enforce, .drop = BoundRules::Drop::MoveToBpf, .mayMove = mayMove};
}

OverheadBound::OverheadBound(std::unique_ptr<CostMeter> meter, BoundRules rules)
    : meter_(std::move(meter)),
      rules_(rules),
      droppedAt_(meter_->probeCount(), std::nullopt),
      droppedCount_(meter_->probeCount(), 0),
      sampleEvery_(meter_->probeCount(), 0) {}

void OverheadBound::govern(BoundProbes& probes, double now, bool act, const BoundCallback& tell) {
  if (!probes.sample(*meter_, now, !act, rules_.plusFiltered)) return;
  if (!act || !meter_->overBudget()) return;
  if (rules_.drop == BoundRules::Drop::MoveToBpf) return moveOrWarn(now, tell);
  if (!rules_.enforce) return warnOnce(now, tell);
  if (rules_.drop == BoundRules::Drop::UntilWithin) dropUntilWithin(probes, now, tell);
  else sampleOrDropDearest(probes, now, tell);
}

void OverheadBound::warnOnce(double now, const BoundCallback& tell) {
  if (warned_) return;
  warned_ = true;
  const BoundAction a{BoundAction::Kind::Warned, now, {}, 0, 0, meter_->recentPct(), meter_->budgetPct(), meter_->warning()};
  meter_->addAction(rules_.warnedWithTime ? "warned at " + std::to_string(static_cast<int>(now)) + " s" : "warned");
  if (tell) tell(a);
}

void OverheadBound::moveOrWarn(double now, const BoundCallback& tell) {
  if (moved_) return;
  const double share = meter_->recentPct(), rate = meter_->recentRate(0);
  const std::string func = meter_->probeCount() ? meter_->func(0) : std::string();
  char text[512];
  if (rules_.enforce && rules_.mayMove) {
    moved_ = true;
    std::snprintf(text, sizeof text,
                  "over budget (the target was stopped %.0f%% of the last second at %.0f hits/s > %.2f%%): moving the "
                  "probe from Delve to BPF; the session goes on (floats print as <unavailable> there)",
                  share, rate, meter_->budgetPct());
    meter_->addAction(text);
    if (tell) tell({BoundAction::Kind::Moved, now, func, 0, 0, share, meter_->budgetPct(), text});
    return;
  }
  if (warned_) return;
  warned_ = true;
  std::snprintf(text, sizeof text,
                "warning: the target was stopped %.0f%% of the last second (%.0f hits/s), above the %.2f%% budget; %s",
                share, rate, meter_->budgetPct(),
                rules_.mayMove ? "--max-overhead PCT moves the probe to BPF when it is exceeded"
                               : "BPF cannot serve what was asked (expressions, locals, --cond, a location that is not a function, "
                                 "or break's --max-elements/--max-depth)");
  meter_->addAction(text);
  if (tell) tell({BoundAction::Kind::Warned, now, func, 0, 0, share, meter_->budgetPct(), text});
}

void OverheadBound::dropUntilWithin(BoundProbes& probes, double now, const BoundCallback& tell) {
  std::vector<uint32_t> ids = meter_->dearestToDrop();
  if (ids.empty()) return;
  auto d = probes.drop(ids);
  const double share = meter_->recentPct();
  meter_->restartOverBudgetClock();
  if (!d) {
    if (rules_.sayFailedDrop && tell)
      tell({BoundAction::Kind::Warned, now, {}, 0, 0, share, meter_->budgetPct(),
            "could not drop the dearest probes: " + d.error().message});
    return;
  }
  for (uint32_t id : ids) {
    meter_->dropped(id);
    if (id < droppedAt_.size()) {
      droppedAt_[id] = now;
      droppedCount_[id] = probes.calls(id);
    }
    const std::string& func = meter_->func(id);
    char text[512];
    std::snprintf(text, sizeof text,
                  "over budget (%.1f%% of the target's time > %.2f%%): dropped the probe on %s after %llu calls; the "
                  "others keep counting",
                  share, meter_->budgetPct(), func.c_str(), static_cast<unsigned long long>(droppedCount(id)));
    meter_->addAction(text);
    if (tell) tell({BoundAction::Kind::Dropped, now, func, droppedCount(id), 0, share, meter_->budgetPct(), text});
  }
}

void OverheadBound::sampleOrDropDearest(BoundProbes& probes, double now, const BoundCallback& tell) {
  const double share = meter_->recentPct();
  auto top = meter_->dearest();
  if (!top) return;
  const uint32_t id = top->first;
  const std::string& func = meter_->func(id);
  meter_->restartOverBudgetClock();
  char text[512];
  // Sampling shrinks the program's work, not the traps: when the traps
  // alone exceed the budget, only dropping helps.
  const double trapsPct = top->second * meter_->perCallNs(id) / 1e7;
  if (rules_.sampleFirst && sampleEvery(id) == 0 && trapsPct <= meter_->budgetPct()) {
    uint32_t n = 2;
    while (n < 1024 && n < share / std::max(0.01, meter_->budgetPct())) n *= 2;
    if (probes.sampleEvery(id, n)) {
      sampleEvery_[id] = n;
      std::snprintf(text, sizeof text,
                    "over budget (%.1f%% of the target's time > %.2f%%): %s's calls are now shown 1 in %u (sampled); "
                    "counts of what was left out are at the end",
                    share, meter_->budgetPct(), func.c_str(), n);
      meter_->addAction(text);
      if (tell) tell({BoundAction::Kind::Sampled, now, func, 0, n, share, meter_->budgetPct(), text});
      return;
    }
  }
  auto d = probes.drop({id});
  if (!d) {
    if (rules_.sayFailedDrop && tell)
      tell({BoundAction::Kind::Warned, now, {}, 0, 0, share, meter_->budgetPct(),
            "could not drop the dearest probes: " + d.error().message});
    return;
  }
  meter_->dropped(id);
  const uint64_t calls = probes.calls(id);
  if (id < droppedAt_.size()) {
    droppedAt_[id] = now;
    droppedCount_[id] = calls;
  }
  std::snprintf(text, sizeof text,
                "over budget (%.1f%% of the target's time > %.2f%%): dropped the probes on %s after %llu calls%s", share,
                meter_->budgetPct(), func.c_str(), static_cast<unsigned long long>(calls),
                sampleEvery(id) || trapsPct > meter_->budgetPct()
                    ? " (sampling could not help: the traps themselves cost too much)"
                    : "");
  meter_->addAction(text);
  if (tell) tell({BoundAction::Kind::Dropped, now, func, calls, 0, share, meter_->budgetPct(), text});
}

}  // namespace goscope::session
