// api::hostCosts: what a probe hit costs on this host, calibrated once per
// kernel and CPU (backend/bpf/calibration.hpp, ~0.3 s) and cached in
// $XDG_CACHE_HOME/goscope/host-costs.json (~/.cache/goscope/ without it).
// The cache is a hint, never trusted blindly: a file for another kernel or
// CPU, or with a figure outside what a probe can cost, is measured again and
// rewritten (atomically, through a rename).
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

#include "api/goscope.hpp"
#include "backend/bpf/calibration.hpp"
#include "backend/bpf/privileges.hpp"
#include "util/cache_dir.hpp"
#include <spdlog/spdlog.h>

namespace goscope::api {

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

std::string text(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// The cached figures for this host, if the file holds sane ones.
std::optional<HostCosts> loadCache(const std::string& identity) {
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
  HostCosts c;
  c.emulatedNs = number(o, "emulated_ns");
  c.steppedNs = number(o, "stepped_ns");
  c.returnNs = number(o, "return_ns");
  if (!plausibleProbeNs(c.emulatedNs) || !plausibleProbeNs(c.steppedNs) || !plausibleProbeNs(c.returnNs)) return std::nullopt;
  c.source = text(o, "source");
  if (c.source.empty() || c.source.size() > 200) return std::nullopt;
  // A Delve stop measured by an earlier session (optional: absent until one
  // has been; an implausible one is ignored, not the whole file).
  if (double d = number(o, "delve_stop_ns"); plausibleDelveNs(d)) {
    std::string how = text(o, "delve_source");
    if (!how.empty() && how.size() <= 200) {
      c.delveStopNs = d;
      c.delveSource = how;
      c.delveMeasured = true;
    }
  }
  return c;
}

void saveCache(const std::string& identity, const HostCosts& c) {
  const CacheDirectory& d = cacheDirectory();
  if (!d.dir) {
    gSaveError = d.note;
    return;
  }
  boost::json::object o{{"host", identity},         {"emulated_ns", c.emulatedNs}, {"stepped_ns", c.steppedNs},
                        {"return_ns", c.returnNs},  {"source", c.source}};
  if (c.delveMeasured) {
    o["delve_stop_ns"] = c.delveStopNs;
    o["delve_source"] = c.delveSource;
  }
  if (auto w = d.dir->writeFile(kCacheFile, boost::json::serialize(o) + "\n"); !w) {
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
};

State& state() {
  static State s;
  return s;
}

// Calibrates the probe placements into `c` and writes the cache.
Result<void> measureInto(HostCosts& c, const std::string& identity) {
  auto measured = bpf::calibrate();
  if (!measured) return measured.failure();
  c.emulatedNs = measured->emulatedNs;
  c.steppedNs = measured->steppedNs;
  c.returnNs = measured->returnNs;
  char when[64];
  time_t t = ::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  c.source = std::string("calibrated on this host ") + when;
  saveCache(identity, c);
  return {};
}

}  // namespace

HostCosts hostCosts() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.loaded) return s.costs;
  s.loaded = true;
  const std::string identity = hostIdentity();
  if (auto cached = loadCache(identity)) {
    s.costs = *cached;
    return s.costs;
  }
  if (const char* env = std::getenv("GOSCOPE_NO_CALIBRATION"); env && *env) return s.costs;  // the documented defaults
  if (!bpf::checkPrivileges()) return s.costs;
  std::fprintf(stderr, "goscope: measuring what a probe costs on this host (once per kernel and CPU)\n");
  if (auto r = measureInto(s.costs, identity); !r) {
    spdlog::debug("calibration failed: {}", r.error().message);
  } else {
    std::fprintf(stderr, "goscope: probe costs %s\n", whereCached().c_str());
  }
  return s.costs;
}

void preloadHostCosts() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.loaded) return;
  if (auto cached = loadCache(hostIdentity())) {
    s.costs = *cached;
    s.loaded = true;
  }
}

Result<HostCosts> recalibrate() {
  // The cached figures, if any (the Delve figure a session cached stays);
  // never a calibration of its own first (hostCosts() would measure once
  // more before this measure when nothing is cached).
  preloadHostCosts();
  if (auto ok = bpf::checkPrivileges(); !ok) return ok.failure();
  State& s = state();
  std::lock_guard lock(s.mu);
  if (auto r = measureInto(s.costs, hostIdentity()); !r) return r.failure();
  s.loaded = true;
  return s.costs;
}

std::string hostCostsCacheLocation() { return whereCached(); }

void recordDelveStopCost(double perHitNs, const std::string& how) {
  if (!plausibleDelveNs(perHitNs)) return;
  (void)hostCosts();  // loaded first: a later first load must not overwrite what is recorded here
  State& s = state();
  std::lock_guard lock(s.mu);
  s.costs.delveStopNs = perHitNs;
  s.costs.delveSource = how;
  s.costs.delveMeasured = true;
  // Cached for later plans: the stop watch now agrees with the calling
  // thread's own clock within a few per cent (docs/overhead.md). A figure
  // taken under load is high, which errs towards BPF (the path that never
  // stops the target); the next measured session replaces it.
  if (s.costs.source.starts_with("calibrated")) saveCache(hostIdentity(), s.costs);
}

}  // namespace goscope::api
