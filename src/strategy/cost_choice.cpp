#include "strategy/cost_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace goscope {

MeasureVerdict judgeMeasure(const LoadMark& taken, const LoadMark& now) {
  // A clock set back, or a file written by hand: a date to come is no date.
  if (taken.atUnixS > now.atUnixS + 3600) return MeasureVerdict::FromTheFuture;
  if (now.atUnixS - taken.atUnixS > kMeasureMaxAgeS) return MeasureVerdict::TooOld;
  if (1 + taken.perCpu() > kLoadRatioSetAside * (1 + now.perCpu())) return MeasureVerdict::BusierThanNow;
  return MeasureVerdict::Usable;
}

std::string describeMark(const LoadMark& m) {
  char when[32] = "?";
  const time_t t = static_cast<time_t>(m.atUnixS);
  if (tm utc{}; gmtime_r(&t, &utc)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &utc);
  char buf[96];
  std::snprintf(buf, sizeof buf, "at load %.1f on %d CPU%s, %s", m.load, m.cpus, m.cpus == 1 ? "" : "s", when);
  return buf;
}

namespace {

// "; set aside: 1 taken at load 24.0 on 2 CPUs, ... (busier than now: load 0.9), 2 older than 7 days"
template <typename Measure>
std::string setAsideText(const std::vector<Measure>& measures, const LoadMark& now, const char* what) {
  size_t old = 0, future = 0, busier = 0;
  const Measure* busiest = nullptr;
  for (const auto& m : measures) switch (judgeMeasure(m.mark, now)) {
      case MeasureVerdict::Usable: break;
      case MeasureVerdict::TooOld: old++; break;
      case MeasureVerdict::FromTheFuture: future++; break;
      case MeasureVerdict::BusierThanNow:
        busier++;
        if (!busiest || m.mark.perCpu() > busiest->mark.perCpu()) busiest = &m;
        break;
    }
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (busier) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%zu %s on a much busier machine than now (%s%s; now load %.1f on %d CPUs)", busier,
                  what, busier > 1 ? "the busiest " : "", describeMark(busiest->mark).c_str(), now.load, now.cpus);
    add(buf);
  }
  if (old) add(std::to_string(old) + " " + what + " more than " + std::to_string(kMeasureMaxAgeS / 86400) + " days ago");
  if (future) add(std::to_string(future) + " dated after now");
  return out.empty() ? out : "set aside: " + out;
}

}  // namespace

ProbeChoice chooseProbeFigures(const std::vector<ProbeMeasure>& measures, const LoadMark& now) {
  ProbeChoice c;
  const ProbeMeasure *emulated = nullptr, *stepped = nullptr, *ret = nullptr;
  for (const auto& m : measures) {
    if (judgeMeasure(m.mark, now) != MeasureVerdict::Usable) continue;
    c.usable++;
    if (!emulated || m.emulatedNs < emulated->emulatedNs) emulated = &m;
    if (!stepped || m.steppedNs < stepped->steppedNs) stepped = &m;
    if (!ret || m.returnNs < ret->returnNs) ret = &m;
  }
  const std::string aside = setAsideText(measures, now, "taken");
  if (c.usable == 0) {
    c.why = measures.empty() ? "nothing measured on this host yet" : aside;
    return c;
  }
  ProbeMeasure f;
  f.emulatedNs = emulated->emulatedNs;
  f.steppedNs = stepped->steppedNs;
  f.returnNs = ret->returnNs;
  f.mark = stepped->mark;
  c.figures = f;
  if (emulated == stepped && stepped == ret) {
    c.why = "calibrated on this host " + describeMark(stepped->mark);
    if (c.usable > 1) c.why += " (the lowest of " + std::to_string(c.usable) + " measures here)";
  } else {
    c.why = "calibrated on this host, the lowest of " + std::to_string(c.usable) + " measures: emulated " +
            describeMark(emulated->mark) + "; single-stepped " + describeMark(stepped->mark) + "; RET " +
            describeMark(ret->mark);
  }
  if (!aside.empty()) c.why += "; " + aside;
  return c;
}

DelveChoice chooseDelveFigure(const std::vector<DelveMeasure>& measures, const LoadMark& now) {
  DelveChoice c;
  const DelveMeasure* best = nullptr;
  size_t usable = 0;
  for (const auto& m : measures) {
    if (judgeMeasure(m.mark, now) != MeasureVerdict::Usable) continue;
    usable++;
    if (!best || m.stopNs < best->stopNs) best = &m;
  }
  const std::string aside = setAsideText(measures, now, "measured");
  if (!best) {
    c.why = "default from docs/delve.md (" + (measures.empty() ? std::string("no Delve session measured here yet") : aside) + ")";
    return c;
  }
  c.figure = *best;
  char buf[160];
  std::snprintf(buf, sizeof buf, "measured here: %llu Delve hits stopped the target %.0f ms, ",
                static_cast<unsigned long long>(best->hits), best->stoppedMs);
  c.why = buf + describeMark(best->mark);
  if (usable > 1) c.why += " (the lowest of " + std::to_string(usable) + " sessions measured)";
  if (!aside.empty()) c.why += "; " + aside;
  return c;
}

template <typename Measure>
std::vector<Measure> keptMeasures(std::vector<Measure> measures, const Measure& added, const LoadMark& now) {
  // First, so that the stable sort keeps it ahead of a measure taken in the
  // same second (a calibration can take less than one).
  measures.insert(measures.begin(), added);
  std::erase_if(measures, [&](const Measure& m) {
    const MeasureVerdict v = judgeMeasure(m.mark, now);
    return v == MeasureVerdict::TooOld || v == MeasureVerdict::FromTheFuture;
  });
  std::stable_sort(measures.begin(), measures.end(),
                   [](const Measure& a, const Measure& b) { return a.mark.atUnixS > b.mark.atUnixS; });
  if (measures.size() > kMaxMeasures) measures.resize(kMaxMeasures);
  return measures;
}

template std::vector<ProbeMeasure> keptMeasures(std::vector<ProbeMeasure>, const ProbeMeasure&, const LoadMark&);
template std::vector<DelveMeasure> keptMeasures(std::vector<DelveMeasure>, const DelveMeasure&, const LoadMark&);

void applyChoice(HostCosts& costs, const ProbeChoice& choice) {
  if (!choice.figures) return;
  costs.emulatedNs = choice.figures->emulatedNs;
  costs.steppedNs = choice.figures->steppedNs;
  costs.returnNs = choice.figures->returnNs;
  costs.source = choice.why;
}

void applyChoice(HostCosts& costs, const DelveChoice& choice) {
  costs.delveSource = choice.why;
  costs.delveMeasured = choice.figure.has_value();
  costs.delveStopNs = choice.figure ? choice.figure->stopNs : HostCosts{}.delveStopNs;
}

}  // namespace goscope
