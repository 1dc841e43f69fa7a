#include "session/cost_meter.hpp"

#include <unistd.h>

#include "backend/bpf/function_selection.hpp"
#include "process/process_cpu.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace goscope::session {

namespace {
constexpr double kSustainedS = 1.0;  // over budget this long before acting (or warning)
}

int onlineCpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

const char* kindName(BoundAction::Kind k) {
  switch (k) {
    case BoundAction::Kind::Warned: return "warned";
    case BoundAction::Kind::Dropped: return "dropped";
    case BoundAction::Kind::Sampled: return "sampled";
    case BoundAction::Kind::Moved: return "moved";
  }
  return "?";
}

double perCallNs(const HostCosts& costs, ProbeSite::Kind entry, bool returns, bool endsEmulated) {
  const Placement p = entry == ProbeSite::Kind::SteppedEntry ? Placement::Stepped : Placement::Emulated;
  const double end = endsEmulated ? costs.perHitNs(Placement::Emulated) : costs.returnNs;
  return costs.perHitNs(p) + (returns ? end : 0);
}

CostMeter::Probe meteredProbe(const HostCosts& costs, const SelectedFunction& f, bool returns) {
  return {f.fn->name, perCallNs(costs, f.probeKind, returns, f.callEndsEmulated),
          returns && f.callEndsMixed ? perCallNs(costs, f.probeKind, returns, true) : 0};
}

std::string describe(const SessionCost& c) {
  char buf[512];
  std::string stopped;
  if (c.stoppedMs > 0 || c.stoppedMeasured) {
    char s[96];
    if (c.stoppedAtHitsMs > 0)
      std::snprintf(s, sizeof s, ", stopped %.1f ms (%.1f ms at hits)%s", c.stoppedMs, c.stoppedAtHitsMs,
                    c.stoppedMeasured ? "" : " (at least)");
    else
      std::snprintf(s, sizeof s, ", stopped %.1f ms%s", c.stoppedMs, c.stoppedMeasured ? "" : " (at least)");
    stopped = s;
  } else {
    stopped = ", never stopped";
  }
  std::string peak;
  if (c.peakRate > 0) {
    char s[256];
    std::snprintf(s, sizeof s, ", peak %.0f hits/s%s%s", c.peakRate, c.peakFunction.empty() ? "" : " in ",
                  c.peakFunction.c_str());
    peak = s;
  }
  std::snprintf(buf, sizeof buf, "cost to the target: ~%.1f ms of CPU in %.1f s%s (%.2f%% of one CPU, budget %.2f%%%s)%s",
                c.cpuMs, c.elapsedS, stopped.c_str(), c.sharePct(), c.budgetPct, c.enforced ? ", enforced" : "",
                peak.c_str());
  std::string out = buf;
  if (c.capped && c.machineCpuMs) {
    char s[256];
    std::snprintf(s, sizeof s,
                  "; capped at what all %d CPUs could run in that time: the host's per-hit figures priced %.1f ms",
                  c.machineCpus, c.estimateCpuMs);
    out += s;
  } else if (c.capped) {
    char s[256];
    std::snprintf(s, sizeof s,
                  "; capped at the target's own CPU time: the host's per-hit figures priced %.1f ms, more than it used",
                  c.estimateCpuMs);
    out += s;
  }
  if (c.filteredOut)
    out += "; " + std::to_string(*c.filteredOut) + " calls filtered out in the kernel (never sent)";
  return out;
}

CostMeter::CostMeter(std::vector<Probe> probes, const HostCosts& costs, double budgetPct, bool enforce)
    : probes_(std::move(probes)),
      costs_(costs),
      budgetPct_(budgetPct),
      enforce_(enforce),
      dropped_(probes_.size(), false),
      last_(probes_.size(), 0),
      rate_(probes_.size(), 0),
      windowDelta_(probes_.size(), 0),
      secondRate_(probes_.size(), 0) {}

void CostMeter::sample(const std::vector<uint64_t>& counts, double now, std::optional<uint64_t> measuredNs) {
  const double dt = now - lastT_;
  if (dt <= 0) return;
  double costNs = 0;
  for (size_t i = 0; i < probes_.size(); i++) {
    const uint64_t c = i < counts.size() ? counts[i] : last_[i];
    const uint64_t delta = c >= last_[i] ? c - last_[i] : 0;
    last_[i] = c;
    windowDelta_[i] += delta;
    rate_[i] = static_cast<double>(delta) / dt;
    costNs += static_cast<double>(delta) * probes_[i].perCallNs;
  }
  if (measuredNs) {
    // What the BPF programs themselves ran (the per-hit figures include a
    // count program too: tens of ns a hit counted twice, on the safe side),
    // or a Delve session's stops. Both count from the session's start: the
    // programs are the session's own, loaded with it, and run only once
    // attached, so the first sample's figure is all the session's (taking
    // it as a base left the first window without it, and the share "since
    // attached" then grew all session long).
    const uint64_t before = measuredLast_.value_or(0);
    if (*measuredNs >= before) costNs += static_cast<double>(*measuredNs - before);
    measuredLast_ = measuredNs;
  }
  cpuNs_ += costNs;
  if (targetPid_) {
    // No window costs the target more than its own clock advanced in it
    // (a window whose ticks the clock has not counted yet costs nothing, the
    // next one the more: the sum never exceeds the clock). A process that
    // exited (or was reaped) has no clock to read: from then on nothing is
    // capped, the total neither (its last ticks are unknown).
    if (auto clock = processCpuNs(targetPid_); clock && targetLast_ && *clock >= *targetLast_) {
      costNs = std::min(costNs, static_cast<double>(*clock - *targetLast_));
      targetLast_ = clock;
    } else {
      targetLast_.reset();
    }
  } else if (machineCpus_ > 0) {
    // Any process running the binary: no more than every CPU for the window.
    costNs = std::min(costNs, dt * 1e9 * machineCpus_);
  }
  recentPct_ = costNs / (dt * 1e9) * 100.0;
  lastT_ = now;
  // The peak over windows of about a second (samples come every ~250 ms,
  // a little late on a loaded machine): one rate per second, the same in
  // the peak, the warning and a -i 1 report.
  windowS_ += dt;
  if (windowS_ >= 0.95) {
    double total = 0, top = 0;
    std::string func;
    for (size_t i = 0; i < probes_.size(); i++) {
      secondRate_[i] = static_cast<double>(windowDelta_[i]) / windowS_;
      total += secondRate_[i];
      if (secondRate_[i] > top) {
        top = secondRate_[i];
        func = probes_[i].func;
      }
      windowDelta_[i] = 0;
    }
    if (total > peakRate_) {
      peakRate_ = total;
      peakFunc_ = top >= total * 0.5 ? func : std::string();
    }
    windowS_ = 0;
    haveSecond_ = true;
  }
  if (recentPct_ > budgetPct_) {
    if (!overSince_) overSince_ = now - dt;
  } else {
    overSince_.reset();
  }
}

bool CostMeter::overBudget() const { return overSince_ && lastT_ - *overSince_ >= kSustainedS; }

std::optional<std::pair<uint32_t, double>> CostMeter::dearest() const {
  std::optional<std::pair<uint32_t, double>> best;
  double bestNs = 0;
  for (size_t i = 0; i < probes_.size(); i++) {
    if (dropped_[i]) continue;
    const double ns = rate_[i] * probes_[i].perCallNs;
    if (ns > bestNs) {
      bestNs = ns;
      best = {static_cast<uint32_t>(i), rate_[i]};
    }
  }
  return best;
}

std::vector<uint32_t> CostMeter::dearestToDrop() const {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < probes_.size(); i++)
    if (!dropped_[i] && rate_[i] > 0) ids.push_back(static_cast<uint32_t>(i));
  auto nsPerS = [&](uint32_t i) { return rate_[i] * probes_[i].perCallNs; };
  std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return nsPerS(a) > nsPerS(b); });
  double pct = 0;
  for (uint32_t i : ids) pct += nsPerS(i) / 1e7;
  std::vector<uint32_t> out;
  for (uint32_t i : ids) {
    if (pct <= budgetPct_) break;
    out.push_back(i);
    pct -= nsPerS(i) / 1e7;
  }
  return out;
}

void CostMeter::watchTarget(pid_t pid) {
  targetPid_ = pid;
  targetBase_ = targetLast_ = processCpuNs(pid);
}

void CostMeter::watchMachine(int cpus) { machineCpus_ = cpus; }

void CostMeter::dropped(uint32_t id) {
  if (id < dropped_.size()) {
    dropped_[id] = true;
    rate_[id] = 0;
  }
}

std::string CostMeter::warning() const {
  char buf[512];
  auto top = dearest();
  std::string where;
  if (top) {
    char w[256];
    const Probe& p = probes_[top->first];
    const std::string each = p.perCallLowNs > 0 ? "~" + describeNs(p.perCallLowNs) + " to ~" + describeNs(p.perCallNs) +
                                                      " (calls end at emulated and at stepped instructions)"
                                                : "~" + describeNs(p.perCallNs);
    if (haveSecond_)
      std::snprintf(w, sizeof w, " (most in %s: %.0f calls/s over the last second x %s)", p.func.c_str(),
                    secondRate_[top->first], each.c_str());
    else
      std::snprintf(w, sizeof w, " (most in %s: %.0f calls/s x %s)", p.func.c_str(), top->second, each.c_str());
    where = w;
  }
  std::snprintf(buf, sizeof buf,
                "warning: the probes take ~%.1f%% of the target's time (of one CPU), above the %.2f%% budget%s; "
                "--max-overhead PCT bounds it (hot probes are then sampled or dropped, and said so), "
                "--max-overhead 100 keeps every hit",
                recentPct_, budgetPct_, where.c_str());
  return buf;
}

SessionCost CostMeter::totals(double elapsedS) const {
  SessionCost c;
  c.elapsedS = elapsedS;
  c.cpuMs = cpuNs_ / 1e6;
  c.estimateCpuMs = c.cpuMs;
  if (targetPid_ && targetBase_ && targetLast_ && *targetLast_ >= *targetBase_) {
    // As of the last sample (sessions sample once more as they detach); a
    // target gone before it has no figure here.
    const double used = static_cast<double>(*targetLast_ - *targetBase_);
    c.targetCpuMs = used / 1e6;
    if (cpuNs_ > used) {
      c.capped = true;
      c.cpuMs = used / 1e6;
    }
  } else if (!targetPid_ && machineCpus_ > 0) {
    const double all = elapsedS * 1e9 * machineCpus_;
    c.machineCpuMs = all / 1e6;
    c.machineCpus = machineCpus_;
    if (cpuNs_ > all) {
      c.capped = true;
      c.cpuMs = all / 1e6;
    }
  }
  c.peakRate = peakRate_;
  c.peakFunction = peakFunc_;
  if (!haveSecond_ && windowS_ >= 0.2) {
    // A session shorter than a second: its one window, as long as it was.
    double top = 0;
    c.peakRate = 0;
    for (size_t i = 0; i < probes_.size(); i++) {
      const double rate = static_cast<double>(windowDelta_[i]) / windowS_;
      c.peakRate += rate;
      if (rate > top) {
        top = rate;
        c.peakFunction = probes_[i].func;
      }
    }
    if (top < c.peakRate * 0.5) c.peakFunction.clear();
  }
  c.budgetPct = budgetPct_;
  c.enforced = enforce_;
  c.figures = costs_.source;
  c.actions = actions_;
  return c;
}

}  // namespace goscope::session
