// goscope count: call counts of every matching function, counted in the
// kernel (a per-CPU array; nothing crosses to user space per hit), read each
// interval and at the end. `--read VAR` also reads a global on each hit of
// the first function and reports its value and rate, as the talks' counter
// demo did.
#include <boost/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include "backend/bpf/bpf_engine.hpp"
#include "cli/command.hpp"
#include "cli/trace_options.hpp"
#include "session/function_selection.hpp"
#include "session/go_runtime_facts.hpp"
#include "session/session_loop.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

struct ReadVar {
  GlobalVariable var;
  uint64_t runtimeAddress = 0;
};

class CountReporter {
 public:
  CountReporter(const Selection& sel, bool json, const std::optional<ReadVar>& read)
      : sel_(sel), json_(json), read_(read), last_(sel.functions.size(), 0) {
    lastT_ = monotonicSeconds();
  }

  void interval(const bpf::Engine& eng) {
    StopSignalsHeld held;  // a Ctrl-C must not cut a report (and the totals after it)
    auto counts = eng.counts();
    if (!counts) return;
    double now = monotonicSeconds(), dt = std::max(1e-9, now - lastT_);
    std::string clock = wallClock();
    for (const auto& f : sel_.functions) {
      uint64_t c = f.probeId < counts->size() ? (*counts)[f.probeId] : 0;
      uint64_t delta = c - last_[f.probeId];
      last_[f.probeId] = c;
      if (delta == 0 && sel_.functions.size() > 1) continue;  // many functions: show the active ones
      double rate = static_cast<double>(delta) / dt;
      if (json_) {
        boost::json::object o{{"func", f.fn->name}, {"count", c}, {"delta", delta}, {"rate", std::llround(rate)},
                              {"elapsed_ms", std::llround((now - start_) * 1000)}};
        std::cout << boost::json::serialize(o) << '\n';
      } else {
        std::printf("%s %-40s %12llu %14.0f/s\n", clock.c_str(), f.fn->name.c_str(), static_cast<unsigned long long>(c), rate);
      }
    }
    if (read_) printRead(eng, now);
    lastT_ = now;
    std::fflush(stdout);
  }

  void totals(const bpf::Engine& eng, EndReason why) {
    StopSignalsHeld held;
    auto counts = eng.counts();
    if (!counts) return;
    std::vector<std::pair<uint64_t, const SelectedFunction*>> rows;
    for (const auto& f : sel_.functions) {
      uint64_t c = f.probeId < counts->size() ? (*counts)[f.probeId] : 0;
      if (c > 0 || sel_.functions.size() == 1) rows.push_back({c, &f});
    }
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second->fn->name < b.second->fn->name; });
    if (json_) {
      for (auto& [c, f] : rows) {
        boost::json::object o{{"func", f->fn->name}, {"count", c}, {"final", true}};
        std::cout << boost::json::serialize(o) << '\n';
      }
      if (read_) printRead(eng, monotonicSeconds());
    } else {
      std::printf("\n%-48s %12s\n", "FUNC", "COUNT");
      for (auto& [c, f] : rows) std::printf("%-48s %12llu\n", f->fn->name.c_str(), static_cast<unsigned long long>(c));
      if (rows.empty()) std::printf("(no calls)\n");
      std::fprintf(stderr, "goscope: %s; %zu functions probed\n", describe(why).c_str(), sel_.functions.size());
    }
    std::fflush(stdout);
  }

 private:
  void printRead(const bpf::Engine& eng, double now) {
    auto g = eng.globalValue(0);
    if (!g || g->tsNs == 0) {
      if (json_) std::cout << boost::json::serialize(boost::json::object{{"var", read_->var.name}, {"value", nullptr}}) << '\n';
      else std::printf("%s: not read yet (no hit)\n", read_->var.name.c_str());
      return;
    }
    int64_t value = static_cast<int64_t>(g->value);
    // The variable's own rate of change between two reports (the first report
    // has nothing to compare with).
    std::optional<long long> rate;
    if (haveRead_) rate = std::llround(static_cast<double>(value - lastValue_) / std::max(1e-9, now - lastReadT_));
    if (json_) {
      boost::json::object o{{"var", read_->var.name}, {"value", value}};
      o["rate"] = rate ? boost::json::value(*rate) : boost::json::value(nullptr);
      std::cout << boost::json::serialize(o) << '\n';
    } else if (rate) {
      std::printf("%s: %lld (%lld ops/s)\n", read_->var.name.c_str(), static_cast<long long>(value), *rate);
    } else {
      std::printf("%s: %lld\n", read_->var.name.c_str(), static_cast<long long>(value));
    }
    lastValue_ = value;
    lastReadT_ = now;
    haveRead_ = true;
  }

  const Selection& sel_;
  bool json_;
  std::optional<ReadVar> read_;
  std::vector<uint64_t> last_;
  double start_ = monotonicSeconds(), lastT_ = 0, lastReadT_ = 0;
  int64_t lastValue_ = 0;
  bool haveRead_ = false;
};

}  // namespace

int runCount(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs({{"read", 0, true, "read this global (e.g. main.counter) on each hit of the first function"},
                                 {"entry", 0, false, "probe the plain function entry, not the cheaper stack-check branch"}});
  auto args = orRaise(parseArgs("count", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope count (-p PID | -c 'CMD ARGS' | -b BINARY) [-i SECS] [-d SECS] [--read VAR] [--json] PATTERN...", specs);
    return 0;
  }
  TraceSetup setup = prepareTrace(args, "count");
  SelectionOptions so;
  so.plainEntry = args.has("entry");
  Selection sel = orRaise(selectFunctions(setup.target.binary(), setup.patterns, so, setup.target.describe()));

  std::optional<ReadVar> read;
  if (auto name = args.get("read")) {
    GlobalVariable v = orRaise(findGlobal(setup.target.binary(), *name));
    if (v.size == 0 || v.size > 8)
      raise({ErrorKind::Usage, "--read " + *name + ": only variables of 1 to 8 bytes can be read per hit (it has " + std::to_string(v.size) + ")"});
    read = ReadVar{v, 0};
  }

  auto engine = orRaise(bpf::Engine::load({.goidOffset = goidOffset(setup.target.binary())}));
  auto configureRead = [&] {
    read->runtimeAddress = read->var.address + orRaise(setup.target.loadBias());
    orRaise(engine->configureProbe(0, bpf::ProbeConfig{.count = true, .readGlobal = bpf::GlobalRead{read->runtimeAddress, static_cast<uint8_t>(read->var.size)}}));
  };
  for (const auto& f : sel.functions) orRaise(engine->configureProbe(f.probeId, bpf::ProbeConfig{.count = true}));
  // A PIE started by -c has no load bias until it runs: configure the read
  // after release (reconfiguring zeroes that probe's count of the first
  // moments); everything else knows its addresses now.
  bool readAfterStart = read && setup.target.isLaunched() && setup.target.binary().elf().isPie();
  if (read && !readAfterStart) configureRead();
  auto stats = orRaise(engine->attach(setup.target.attachPath(), setup.target.pidFilter(), sel.points));
  orRaise(setup.target.release());
  if (readAfterStart) configureRead();
  announce(setup, sel, stats, args.has("json"));

  CountReporter reporter(sel, args.has("json"), read);
  EndReason why = runSessionLoop(setup.target, setup.loop, [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); },
                                 [&] { reporter.interval(*engine); });
  reporter.totals(*engine, why);
  auto detached = engine->detachAll();
  std::fprintf(stderr, "goscope: detached %zu probes in %.1f ms\n", detached.points, detached.detachMs);
  return 0;
}

}  // namespace goscope::cli
