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

std::string cachePath() {
  std::string d = cacheDir();
  return d.empty() ? d : d + "/host-costs.json";
}

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
  const std::string path = cachePath();
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > 64 * 1024) return std::nullopt;
  boost::system::error_code ec;
  auto doc = boost::json::parse(ss.str(), ec);
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
  const std::string dir = cacheDir();
  if (dir.empty()) return;
  // mkdir -p of the last two levels (~/.cache may not exist yet); the file
  // holds only figures, so it is written whoever owns the directory.
  makePrivateDir(dir);
  boost::json::object o{{"host", identity},         {"emulated_ns", c.emulatedNs}, {"stepped_ns", c.steppedNs},
                        {"return_ns", c.returnNs},  {"source", c.source}};
  if (c.delveMeasured) {
    o["delve_stop_ns"] = c.delveStopNs;
    o["delve_source"] = c.delveSource;
  }
  const std::string path = cachePath(), tmp = path + "." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    out << boost::json::serialize(o) << "\n";
    if (!out) return;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
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
  std::fprintf(stderr, "goscope: measuring what a probe costs on this host (once per kernel and CPU; cached in %s)\n",
               cachePath().empty() ? "memory only: no $HOME" : cachePath().c_str());
  if (auto r = measureInto(s.costs, identity); !r) spdlog::debug("calibration failed: {}", r.error().message);
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
  (void)hostCosts();  // the Delve figure a session cached stays
  if (auto ok = bpf::checkPrivileges(); !ok) return ok.failure();
  State& s = state();
  std::lock_guard lock(s.mu);
  if (auto r = measureInto(s.costs, hostIdentity()); !r) return r.failure();
  return s.costs;
}

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
