// session::hostCosts: what a probe hit costs on this host, calibrated per
// kernel and CPU (backend/bpf/calibration.hpp, ~0.3 s) and cached in
// $XDG_CACHE_HOME/goscope/host-costs.json (~/.cache/goscope/ without it, a
// per-user temporary directory when that cannot be used: util/cache_dir.hpp).
// The cache is a hint, never trusted blindly: it holds the recent measures,
// each marked with the load it was taken at (host_cost_measures.hpp),
// and a plan uses the lowest usable one (strategy/cost_choice.hpp); with
// none (a file for another kernel or CPU, measures too old or all taken on
// a much busier machine than now) it measures again and rewrites the file
// (atomically, through a rename).
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>

#include "session/host_costs.hpp"
#include "session/host_cost_measures.hpp"
#include "backend/bpf/calibration.hpp"
#include "backend/bpf/privileges.hpp"
#include "util/cache_dir.hpp"
#include "util/notice.hpp"
#include <spdlog/spdlog.h>

namespace goscope::session {

namespace {

std::string hostIdentity() {
  utsname u{};
  ::uname(&u);
  std::string cpu;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.starts_with("model name")) {
      cpu = line.substr(line.find(':') + 1);
      break;
    }
  return std::string(u.release) + " " + u.version + " |" + cpu + " | " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs";
}

constexpr const char* kCacheFile = "host-costs.json";
constexpr size_t kMaxCacheBytes = 64 * 1024;

// Where the file really is (util/cache_dir.hpp: the per-user cache
// directory, or a per-user temporary one when that cannot be used); empty
// when no directory could be had.
std::string cachePath() {
  const CacheDirectory& d = cacheDirectory();
  return d.dir ? d.dir->pathOf(kCacheFile) : std::string();
}

// Set by saveCache when the file could not be written: the reason, for the
// calibration's line.
std::string gSaveError;

bool plausibleDelveNs(double v) { return std::isfinite(v) && v >= 1e4 && v <= 1e9; }

std::string text(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// The cached measures for this host, if the file is this host's.
std::optional<CachedMeasures> loadCache(const std::string& identity) {
  const CacheDirectory& d = cacheDirectory();
  if (!d.dir) return std::nullopt;
  auto content = d.dir->readOwnFile(kCacheFile, kMaxCacheBytes);
  if (!content) {
    if (content.error().kind != ErrorKind::NotFound) spdlog::debug("host costs: {} ignored", content.error().message);
    return std::nullopt;
  }
  boost::system::error_code ec;
  auto doc = boost::json::parse(*content, ec);
  if (ec || !doc.is_object()) return std::nullopt;
  const auto& o = doc.as_object();
  if (text(o, "host") != identity) return std::nullopt;
  return measuresFromJson(o);
}

void saveCache(const std::string& identity, const CachedMeasures& c, const HostCosts& chosen) {
  const CacheDirectory& d = cacheDirectory();
  if (!d.dir) {
    gSaveError = d.note;
    return;
  }
  if (auto w = d.dir->writeFile(kCacheFile, boost::json::serialize(measuresToJson(identity, c, chosen)) + "\n"); !w) {
    gSaveError = w.error().message;
    spdlog::debug("host costs: {}", gSaveError);
  } else {
    gSaveError.clear();
  }
}

// Where the figures went, for the calibration's line: the file, with why it
// is not the usual place; or why they stay in memory.
std::string whereCached() {
  const CacheDirectory& d = cacheDirectory();
  if (!gSaveError.empty()) return "not cached: " + gSaveError;
  if (!d.dir) return "not cached: " + d.note;
  return "cached in " + cachePath() + (d.note.empty() ? "" : " (" + d.note + ")");
}

struct State {
  std::mutex mu;
  bool loaded = false;
  HostCosts costs;
  CachedMeasures measures;  // this host's, as cached (and added to here)
  bool cacheRead = false;
  std::optional<ProbeMeasure> measuredNow;  // by this process (calibrate)
};

State& state() {
  static State s;
  return s;
}

// The cached measures into `s` (once).
void readCache(State& s, const std::string& identity) {
  if (s.cacheRead) return;
  s.cacheRead = true;
  if (auto cached = loadCache(identity)) s.measures = std::move(*cached);
}

// The figures plans use, from the measures and the load now. False when no
// probe measure is usable (the Delve figure is chosen anyway).
bool choose(State& s, const LoadMark& now, std::string* why = nullptr) {
  applyChoice(s.costs, chooseDelveFigure(s.measures.delves, now));
  const ProbeChoice c = chooseProbeFigures(s.measures.probes, now);
  applyChoice(s.costs, c);
  if (why) {
    *why = c.why;
    if (s.measures.unmarked && s.measures.probes.empty())
      *why = "the cached figures carry no load mark (an older goscope's)";
  }
  return c.figures.has_value();
}

// Calibrates the probe placements, adds the measure to the cache and
// chooses again.
Result<void> measureInto(State& s, const std::string& identity) {
  auto measured = bpf::calibrate();
  if (!measured) return measured.failure();
  // Marked with the load after the measure: the 1-minute average moves
  // little in the 0.1-0.5 s it takes.
  const LoadMark now = loadNow();
  ProbeMeasure m{measured->emulatedNs, measured->steppedNs, measured->returnNs, now};
  s.measuredNow = m;
  s.measures.probes = keptMeasures(std::move(s.measures.probes), m, now);
  s.measures.unmarked = false;
  choose(s, now);
  saveCache(identity, s.measures, s.costs);
  return {};
}

}  // namespace

HostCosts hostCosts() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.loaded) return s.costs;
  s.loaded = true;
  const std::string identity = hostIdentity();
  readCache(s, identity);
  std::string why;
  const LoadMark now = loadNow();
  if (choose(s, now, &why)) return s.costs;
  // The documented defaults, saying why no measure was used.
  s.costs.source = HostCosts{}.source + "; " + why;
  if (const char* env = std::getenv("GOSCOPE_NO_CALIBRATION"); env && *env) return s.costs;
  if (!bpf::checkPrivileges()) return s.costs;
  notify("measuring what a probe costs on this host (" + why + ")");
  if (auto r = measureInto(s, identity); !r) {
    spdlog::debug("calibration failed: {}", r.error().message);
  } else {
    notify("probe costs " + whereCached());
  }
  return s.costs;
}

void preloadHostCosts() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.loaded) return;
  readCache(s, hostIdentity());
  if (choose(s, loadNow())) s.loaded = true;
}

Result<HostCosts> recalibrate() {
  State& s = state();
  std::lock_guard lock(s.mu);
  const std::string identity = hostIdentity();
  readCache(s, identity);  // the measures cached so far stay, the Delve ones too
  if (auto ok = bpf::checkPrivileges(); !ok) return ok.failure();
  if (auto r = measureInto(s, identity); !r) return r.failure();
  s.loaded = true;
  return s.costs;
}

std::optional<ProbeMeasure> calibratedNow() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.measuredNow;
}

std::string hostCostsCacheLocation() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return whereCached();
}

void recordDelveStopCost(uint64_t hits, double stoppedAtHitsMs) {
  if (hits == 0) return;
  const double perHitNs = stoppedAtHitsMs * 1e6 / static_cast<double>(hits);
  if (!plausibleDelveNs(perHitNs)) return;
  (void)hostCosts();  // loaded first: a later first load must not overwrite what is recorded here
  State& s = state();
  std::lock_guard lock(s.mu);
  // Marked with the load now, as a calibration is: a session on a busy
  // machine measured stops several times dearer than at rest, and that
  // figure must not price plans made at rest (strategy/cost_choice.hpp).
  const LoadMark now = loadNow();
  s.measures.delves = keptMeasures(std::move(s.measures.delves), DelveMeasure{perHitNs, hits, stoppedAtHitsMs, now}, now);
  // This session's figure is this process's from now on; later plans
  // choose among the cached ones.
  applyChoice(s.costs, DelveChoice{DelveMeasure{perHitNs, hits, stoppedAtHitsMs, now},
                                   chooseDelveFigure({DelveMeasure{perHitNs, hits, stoppedAtHitsMs, now}}, now).why});
  saveCache(hostIdentity(), s.measures, s.costs);
}

}  // namespace goscope::session
