#include "session/host_cost_measures.hpp"

#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>
#include <ctime>
#include <fstream>
#include <optional>

namespace goscope::session {

namespace {

bool plausibleProbeNs(double v) { return std::isfinite(v) && v >= 10 && v <= 1e6; }
bool plausibleDelveNs(double v) { return std::isfinite(v) && v >= 1e4 && v <= 1e9; }

double number(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  if (!v) return NAN;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  return NAN;
}

// The mark of one measure, if it is a sane one.
std::optional<LoadMark> markOf(const boost::json::object& o) {
  const double at = number(o, "at"), load = number(o, "load"), cpus = number(o, "cpus");
  if (!std::isfinite(at) || at <= 0 || !std::isfinite(load) || load < 0 || load > 1e6 || !std::isfinite(cpus) ||
      cpus < 1 || cpus > 1e6)
    return std::nullopt;
  return LoadMark{static_cast<int64_t>(at), load, static_cast<int>(cpus)};
}

boost::json::object markJson(const LoadMark& m) {
  return {{"at", m.atUnixS}, {"load", std::round(m.load * 100) / 100}, {"cpus", m.cpus}};
}

template <typename F>
void eachObject(const boost::json::object& doc, const char* key, F&& f) {
  const auto* v = doc.if_contains(key);
  if (!v || !v->is_array()) return;
  for (const auto& e : v->as_array())
    if (e.is_object()) f(e.as_object());
}

}  // namespace

CachedMeasures measuresFromJson(const boost::json::object& doc) {
  CachedMeasures out;
  eachObject(doc, "probe_measures", [&](const boost::json::object& o) {
    ProbeMeasure m;
    m.emulatedNs = number(o, "emulated_ns");
    m.steppedNs = number(o, "stepped_ns");
    m.returnNs = number(o, "return_ns");
    auto mark = markOf(o);
    if (!mark || !plausibleProbeNs(m.emulatedNs) || !plausibleProbeNs(m.steppedNs) || !plausibleProbeNs(m.returnNs)) return;
    m.mark = *mark;
    if (out.probes.size() < 4 * kMaxMeasures) out.probes.push_back(m);
  });
  eachObject(doc, "delve_measures", [&](const boost::json::object& o) {
    DelveMeasure m;
    m.stopNs = number(o, "stop_ns");
    const double hits = number(o, "hits");
    m.stoppedMs = number(o, "stopped_ms");
    auto mark = markOf(o);
    if (!mark || !plausibleDelveNs(m.stopNs) || !std::isfinite(hits) || hits < 1 || !std::isfinite(m.stoppedMs) ||
        m.stoppedMs < 0)
      return;
    m.hits = static_cast<uint64_t>(hits);
    m.mark = *mark;
    if (out.delves.size() < 4 * kMaxMeasures) out.delves.push_back(m);
  });
  out.unmarked = !doc.contains("probe_measures") && (doc.contains("emulated_ns") || doc.contains("delve_stop_ns"));
  return out;
}

boost::json::object measuresToJson(const std::string& identity, const CachedMeasures& m, const HostCosts& chosen) {
  boost::json::array probes, delves;
  for (const auto& p : m.probes) {
    auto o = markJson(p.mark);
    o["emulated_ns"] = std::round(p.emulatedNs);
    o["stepped_ns"] = std::round(p.steppedNs);
    o["return_ns"] = std::round(p.returnNs);
    probes.push_back(std::move(o));
  }
  for (const auto& d : m.delves) {
    auto o = markJson(d.mark);
    o["stop_ns"] = std::round(d.stopNs);
    o["hits"] = d.hits;
    o["stopped_ms"] = std::round(d.stoppedMs * 10) / 10;
    delves.push_back(std::move(o));
  }
  boost::json::object o{{"host", identity}, {"probe_measures", std::move(probes)}, {"delve_measures", std::move(delves)}};
  if (chosen.source.starts_with("calibrated") && plausibleProbeNs(chosen.emulatedNs) &&
      plausibleProbeNs(chosen.steppedNs) && plausibleProbeNs(chosen.returnNs)) {
    o["emulated_ns"] = std::round(chosen.emulatedNs);
    o["stepped_ns"] = std::round(chosen.steppedNs);
    o["return_ns"] = std::round(chosen.returnNs);
    o["source"] = chosen.source.substr(0, 200);
  }
  if (chosen.delveMeasured && plausibleDelveNs(chosen.delveStopNs)) {
    o["delve_stop_ns"] = std::round(chosen.delveStopNs);
    o["delve_source"] = chosen.delveSource.substr(0, 200);
  }
  return o;
}

LoadMark loadNow() {
  LoadMark m;
  m.atUnixS = static_cast<int64_t>(::time(nullptr));
  std::ifstream in("/proc/loadavg");
  double l = 0;
  if (in >> l && std::isfinite(l) && l >= 0) m.load = l;
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = n > 0 ? static_cast<int>(n) : 1;
  return m;
}

}  // namespace goscope::session
