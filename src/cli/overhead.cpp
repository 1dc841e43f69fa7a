// goscope overhead: the talks' comparison in one command. It measures the
// target's throughput — a counter's rate, read from the process's memory
// without stopping it — with no probe and under each way of probing the same
// function, interleaved and repeated so a noisy machine shows in the spread
// instead of hiding in one lucky run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <thread>

#include "api/goscope.hpp"
#include "cli/args.hpp"
#include "cli/command.hpp"
#include "binary/call_sites.hpp"
#include "binary/go_runtime_facts.hpp"
#include "process/process_cpu.hpp"
#include "process/target.hpp"
#include "util/launched_child.hpp"
#include "util/stop_signals.hpp"
#include "output/output.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

using Clock = std::chrono::steady_clock;

const std::vector<OptionSpec> kSpecs = {
    {"pid", 'p', true, "measure this process instead of starting the counter fixture"},
    {"func", 0, true, "the function called once per operation (default main.doWork)"},
    {"counter", 0, true, "the global counting operations (default main.counter)"},
    {"window", 'w', true, "seconds measured per mode and repetition (default 2)"},
    {"repeat", 'r', true, "repetitions of the whole round of modes (default 3)"},
    {"modes", 0, true, "comma-separated subset of modes"},
    {"json", 0, false, "one JSON object per mode"},
    {"help", 'h', false, "this help"},
};

const std::vector<std::string> kAllModes = {"none",           "bpf-count",          "bpf-count-entry",      "bpf-count-read",
                                            "delve-sample-1hz", "delve-break-every-hit", "bpftrace"};

// Every mode hits the probe once per operation, except sampling (once a second).
bool hitsEveryOp(const std::string& m) { return m != "none" && m != "delve-sample-1hz"; }

// A hit's cost is what it adds to an operation. A uprobe's trap, its BPF
// program and any single-step run on the target's thread and are charged to
// its CPU time (process/process_cpu.hpp), so for modes that never stop the
// target the difference of CPU time per operation is the cost, and a loaded
// machine, which changes how much CPU the target gets in each window but not
// what an operation takes, leaves it alone. A Delve stop is time the target
// waits off the CPU: only wall time shows it.
bool stopsTarget(const std::string& m) { return m.starts_with("delve-"); }

struct Subject {
  std::shared_ptr<GoBinary> binary;
  Process process;
  std::string exePath;
  uint64_t counterAddress = 0;  // runtime
  uint8_t counterSize = 8;
  std::string func;
  std::string counterName;
};

// What the strategy expects a hit of `mode` to cost, from the same figures
// it plans with (api::hostCosts: calibrated on this host, or the documented
// defaults), so the demo shows prediction and measurement side by side.
std::optional<double> expectedPerHitNs(const std::string& mode, const Subject& s, const HostCosts& costs) {
  if (mode == "delve-break-every-hit") return costs.delveStopNs;
  if (mode == "bpf-count-entry" || mode == "bpftrace") return costs.perHitNs(Placement::Stepped);  // the plain entry
  if (mode != "bpf-count" && mode != "bpf-count-read") return std::nullopt;
  const GoFunction* fn = s.binary->pclntab().functionNamed(s.func);
  if (!fn) return std::nullopt;
  // What count attaches: the entry probe, or the call sites of a leaf (call_sites.hpp).
  const GoFunction* one[] = {fn};
  const ProbeSite site = countPlacements(*s.binary, one).front();
  if (site.kind == ProbeSite::Kind::None) return std::nullopt;
  return costs.perHitNs(site.kind == ProbeSite::Kind::SteppedEntry ? Placement::Stepped : Placement::Emulated);
}

Result<int64_t> readCounter(const Subject& s) {
  auto bytes = s.process.readMemory(s.counterAddress, s.counterSize);
  if (!bytes) return bytes.failure();
  int64_t v = 0;
  std::memcpy(&v, bytes->data(), std::min<size_t>(bytes->size(), 8));
  return v;
}

// One window's measure: the operations per second of wall time, and the
// target's own CPU time per operation (nullopt when /proc did not say).
struct Window {
  double opsPerS = 0;
  std::optional<double> cpuNsPerOp;
};

// Measures one window without stopping the target.
Result<Window> measureWindow(const Subject& s, double window) {
  auto v0 = readCounter(s);
  if (!v0) return v0.failure();
  const auto cpu0 = processCpuNs(s.process.pid());
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(window));
  auto v1 = readCounter(s);
  if (!v1) return v1.failure();
  const auto cpu1 = processCpuNs(s.process.pid());
  double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  Window w{static_cast<double>(*v1 - *v0) / dt, std::nullopt};
  if (cpu0 && cpu1 && *v1 > *v0) w.cpuNsPerOp = static_cast<double>(*cpu1 - *cpu0) / static_cast<double>(*v1 - *v0);
  return w;
}

// A probing mode: set up before the window, torn down after it.
class Mode {
 public:
  virtual ~Mode() = default;
  virtual Result<void> start() = 0;
  virtual void stop() = 0;
};

class NoProbe : public Mode {
 public:
  Result<void> start() override { return {}; }
  void stop() override {}
};

// The in-kernel counts `goscope count` takes: an aggregate session.
class BpfCount : public Mode {
 public:
  BpfCount(const Subject& s, bool plainEntry, bool readCounter) : s_(s), entry_(plainEntry), read_(readCounter) {}
  Result<void> start() override {
    ProbeRequest r;
    r.action = Action::Count;
    r.target.pid = s_.process.pid();
    r.locations = {s_.func};
    r.plainEntry = entry_;
    if (read_) r.readVariable = s_.counterName;
    r.strategy = StrategyChoice::Bpf;
    auto target = api::openTarget(r);
    if (!target) return target.failure();
    auto plan = api::plan(r, target->binary(), r.target.pid);
    if (!plan) return plan.failure();
    auto session = api::AggregateSession::start(std::move(*target), r, *plan);
    if (!session) return session.failure();
    session_ = std::move(*session);
    return {};
  }
  void stop() override { session_.reset(); }

 private:
  const Subject& s_;
  bool entry_, read_;
  std::unique_ptr<api::AggregateSession> session_;
};

// Delve, through the same sessions `goscope break` and `goscope sample` use,
// run on their own thread (the measuring thread only reads memory).
class DelveMode : public Mode {
 public:
  DelveMode(const Subject& s, bool everyHit) : s_(s), everyHit_(everyHit) {}
  Result<void> start() override {
    ProbeRequest r;
    r.target.pid = s_.process.pid();
    r.locations = {s_.func};
    r.strategy = StrategyChoice::Delve;
    if (everyHit_) {
      r.action = Action::Break;
      auto target = api::openTarget(r);
      if (!target) return target.failure();
      auto plan = api::plan(r, target->binary(), r.target.pid);
      if (!plan) return plan.failure();
      auto session = api::startEventSession(r, *plan, std::move(*target), {});
      if (!session) return session.failure();
      events_ = std::move(*session);
      worker_ = std::thread([this] { events_->run([](const api::Call&) { return true; }); });
      return {};
    }
    // Sampling attaches on its thread: wait until it is sampling, or failed.
    r.action = Action::Sample;
    r.intervalS = 1;
    std::promise<Result<void>> ready;
    auto started = ready.get_future();
    worker_ = std::thread([this, r, &ready] {
      bool told = false;
      auto totals = api::sample(
          r, 1.0, [&](const std::string&) { ready.set_value(Result<void>{}), told = true; },
          [](const api::Sample&) { return true; }, &stop_);
      if (!told) ready.set_value(totals ? Result<void>(fail(ErrorKind::Internal, "sampling ended at once")) : Result<void>(totals.failure()));
    });
    return started.get();
  }
  void stop() override {
    stop_ = true;
    if (events_) events_->stop();
    if (worker_.joinable()) worker_.join();
    events_.reset();
  }
  ~DelveMode() override { stop(); }

 private:
  const Subject& s_;
  bool everyHit_;
  std::unique_ptr<api::EventSession> events_;
  std::thread worker_;
  std::atomic<bool> stop_{false};
};

class Bpftrace : public Mode {
 public:
  explicit Bpftrace(const Subject& s) : s_(s) {}
  Result<void> start() override {
    std::string prog = "uprobe:" + s_.exePath + ":" + s_.func + " { @ = count(); }";
    // Through sh only to silence it: its map dump and warnings are not ours.
    auto child = LaunchedChild::start("sh -c \"exec bpftrace -q -e '" + prog + "' >/dev/null 2>&1\"");
    if (!child) return fail(ErrorKind::External, "bpftrace: " + child.error().message, "apt-get install bpftrace");
    child_.emplace(std::move(*child));
    if (auto r = child_->release(); !r) return r;
    // bpftrace has no "attached" signal on stdout with -q: give it time to
    // compile and attach one probe.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    if (child_->poll()) return fail(ErrorKind::External, "bpftrace exited early");
    return {};
  }
  void stop() override {
    if (!child_) return;
    // bpftrace sometimes misses the first signal: escalate (SIGKILL is safe,
    // the kernel removes its probe).
    child_->terminate();
    child_.reset();
  }
  ~Bpftrace() override { stop(); }

 private:
  const Subject& s_;
  std::optional<LaunchedChild> child_;
};

std::unique_ptr<Mode> makeMode(const std::string& name, const Subject& s) {
  if (name == "none") return std::make_unique<NoProbe>();
  if (name == "bpf-count") return std::make_unique<BpfCount>(s, false, false);
  if (name == "bpf-count-entry") return std::make_unique<BpfCount>(s, true, false);
  if (name == "bpf-count-read") return std::make_unique<BpfCount>(s, false, true);
  if (name == "delve-sample-1hz") return std::make_unique<DelveMode>(s, false);
  if (name == "delve-break-every-hit") return std::make_unique<DelveMode>(s, true);
  if (name == "bpftrace") return std::make_unique<Bpftrace>(s);
  return nullptr;
}

std::string findCounterFixture() {
  std::vector<std::string> candidates;
  if (const char* d = std::getenv("GOSCOPE_FIXTURES")) candidates.push_back(std::string(d) + "/default/counter");
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::filesystem::path dir = std::filesystem::path(std::string(self, static_cast<size_t>(n))).parent_path();
    candidates.push_back((dir / "fixtures/default/counter").string());
  }
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  raise({ErrorKind::NotFound, "the counter fixture was not found (looked in $GOSCOPE_FIXTURES and beside goscope)",
         "bash scripts/build-fixtures.sh build/fixtures, or measure your own process with -p PID --func F --counter VAR"});
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

int runOverhead(const std::vector<std::string>& argv) {
  auto args = orRaise(parseArgs("overhead", kSpecs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope overhead [-p PID --func F --counter VAR] [-w SECS] [-r N] [--modes a,b] [--json]", kSpecs);
    return 0;
  }
  double window = orRaise(args.getSeconds("window", 2));
  auto repeat = orRaise(args.getInt("repeat", 3, 1, 100));
  std::vector<std::string> modes = kAllModes;
  if (auto m = args.get("modes")) {
    modes = splitComma(*m);
    for (const auto& x : modes)
      if (!makeMode(x, Subject{})) raise({ErrorKind::Usage, "overhead: unknown mode '" + x + "'", "modes: none, bpf-count, bpf-count-entry, bpf-count-read, delve-sample-1hz, delve-break-every-hit, bpftrace"});
    if (std::find(modes.begin(), modes.end(), "none") == modes.end()) modes.insert(modes.begin(), "none");
  }

  // Up front, before a counter is started: a BPF mode without the
  // capabilities would only show up as a failed row at the end.
  if (std::any_of(modes.begin(), modes.end(), [](const std::string& m) { return m.starts_with("bpf"); }))
    orRaise(api::checkBpfPrivileges());

  std::optional<LaunchedChild> ownCounter;
  pid_t pid;
  if (auto p = args.get("pid")) {
    pid = orRaise(parsePid(*p));
  } else {
    if (args.has("func") || args.has("counter")) raise({ErrorKind::Usage, "overhead: --func and --counter go with -p PID"});
    ownCounter.emplace(orRaise(LaunchedChild::start(findCounterFixture())));
    orRaise(ownCounter->release());
    pid = ownCounter->pid();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  installStopSignals();
  Target t = orRaise(openProcessTarget(pid));
  Subject s{t.binary, std::move(*t.process), "", 0, 8, args.get("func").value_or("main.doWork"), args.get("counter").value_or("main.counter")};
  s.exePath = s.process.exePath();
  GlobalVariable var = orRaise(findGlobal(*s.binary, s.counterName));
  if (var.size == 0 || var.size > 8) raise({ErrorKind::Usage, "overhead: --counter must be an integer variable of at most 8 bytes"});
  s.counterAddress = var.address + t.loadBias;
  s.counterSize = static_cast<uint8_t>(var.size);
  if (::access("/usr/bin/bpftrace", X_OK) != 0 && ::access("/usr/sbin/bpftrace", X_OK) != 0)
    modes.erase(std::remove(modes.begin(), modes.end(), "bpftrace"), modes.end());

  std::map<std::string, std::vector<double>> rates, cpuPerOp;
  std::map<std::string, std::string> failures;
  bool json = args.has("json");
  for (long long rep = 0; rep < repeat && !stopRequested(); rep++) {
    for (const auto& name : modes) {
      if (stopRequested() || failures.count(name)) continue;
      auto mode = makeMode(name, s);
      if (auto r = mode->start(); !r) {
        failures[name] = r.error().message;
        mode->stop();
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // settle
      auto measured = measureWindow(s, window);
      mode->stop();
      if (!measured) raise(measured.error());  // the target went away: nothing more to measure
      rates[name].push_back(measured->opsPerS);
      if (measured->cpuNsPerOp) cpuPerOp[name].push_back(*measured->cpuNsPerOp);
      if (!json)
        output::toStderr("goscope: round %lld/%lld %-22s %14.0f ops/s\n", rep + 1, repeat, name.c_str(), measured->opsPerS);
    }
  }

  double base = median(rates["none"]);
  const HostCosts costs = api::hostCosts();
  std::vector<output::Output::OverheadRow> rows;
  for (const auto& name : modes) {
    output::Output::OverheadRow row{.mode = name};
    auto it = rates.find(name);
    if (it == rates.end()) {
      row.error = failures[name];
      rows.push_back(std::move(row));
      continue;
    }
    row.opsPerS = median(it->second);
    row.slowdown = row.opsPerS > 0 ? base / row.opsPerS : INFINITY;
    row.perHitFromCpu = !stopsTarget(name) && cpuPerOp[name].size() == it->second.size() &&
                        cpuPerOp["none"].size() == rates["none"].size() && !cpuPerOp["none"].empty();
    if (hitsEveryOp(name) && row.perHitFromCpu) row.perHitNs = median(cpuPerOp[name]) - median(cpuPerOp["none"]);
    else if (hitsEveryOp(name) && row.opsPerS > 0 && base > 0) row.perHitNs = (1.0 / row.opsPerS - 1.0 / base) * 1e9;
    row.runs = it->second;
    row.expectedNs = expectedPerHitNs(name, s, costs);
    rows.push_back(std::move(row));
  }
  auto out = output::makeOutput(json);
  out->overheadTable(rows, costs);
  out->flush();
  return 0;
}

}  // namespace goscope::cli
