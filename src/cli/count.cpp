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

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "output/clock_text.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

// Prints what CountSession snapshots: per interval the active functions and
// their rates, at the end the totals; with --read, the global's value and
// its own rate of change.
class CountReporter {
 public:
  CountReporter(bool json, std::optional<std::string> readVar) : json_(json), readVar_(std::move(readVar)) {}

  void interval(const api::CountSnapshot& snap) {
    StopSignalsHeld held;  // a Ctrl-C must not cut a report (and the totals after it)
    if (last_.size() != snap.functions.size()) last_.assign(snap.functions.size(), 0);
    double now = snap.elapsedS, dt = std::max(1e-9, now - lastT_);
    std::string clock = wallClock();
    for (size_t i = 0; i < snap.functions.size(); i++) {
      const auto& f = snap.functions[i];
      uint64_t delta = f.count - last_[i];
      last_[i] = f.count;
      if (delta == 0 && snap.functions.size() > 1) continue;  // many functions: show the active ones
      double rate = static_cast<double>(delta) / dt;
      if (json_) {
        boost::json::object o{{"func", f.func}, {"count", f.count}, {"delta", delta}, {"rate", std::llround(rate)},
                              {"elapsed_ms", std::llround(now * 1000)}};
        std::cout << boost::json::serialize(o) << '\n';
      } else {
        std::printf("%s %-40s %12llu %14.0f/s\n", clock.c_str(), f.func.c_str(), static_cast<unsigned long long>(f.count), rate);
      }
    }
    if (readVar_) printRead(snap);
    lastT_ = now;
    std::fflush(stdout);
  }

  void totals(const api::CountSnapshot& snap, size_t probed, EndReason why) {
    StopSignalsHeld held;
    std::vector<const api::FunctionCount*> rows;
    for (const auto& f : snap.functions)
      if (f.count > 0 || snap.functions.size() == 1) rows.push_back(&f);
    std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->count != b->count ? a->count > b->count : a->func < b->func; });
    if (json_) {
      for (auto* f : rows) {
        boost::json::object o{{"func", f->func}, {"count", f->count}, {"final", true}};
        std::cout << boost::json::serialize(o) << '\n';
      }
      if (readVar_) printRead(snap);
    } else {
      std::printf("\n%-48s %12s\n", "FUNC", "COUNT");
      for (auto* f : rows) std::printf("%-48s %12llu\n", f->func.c_str(), static_cast<unsigned long long>(f->count));
      if (rows.empty()) std::printf("(no calls)\n");
      std::fprintf(stderr, "goscope: %s; %zu functions probed\n", describe(why).c_str(), probed);
    }
    std::fflush(stdout);
  }

 private:
  void printRead(const api::CountSnapshot& snap) {
    if (!snap.readValue) {
      if (json_) std::cout << boost::json::serialize(boost::json::object{{"var", *readVar_}, {"value", nullptr}}) << '\n';
      else std::printf("%s: not read yet (no hit)\n", readVar_->c_str());
      return;
    }
    int64_t value = *snap.readValue;
    double now = snap.elapsedS;
    // The variable's own rate of change between two reports (the first report
    // has nothing to compare with).
    std::optional<long long> rate;
    if (haveRead_) rate = std::llround(static_cast<double>(value - lastValue_) / std::max(1e-9, now - lastReadT_));
    if (json_) {
      boost::json::object o{{"var", *readVar_}, {"value", value}};
      o["rate"] = rate ? boost::json::value(*rate) : boost::json::value(nullptr);
      std::cout << boost::json::serialize(o) << '\n';
    } else if (rate) {
      std::printf("%s: %lld (%lld ops/s)\n", readVar_->c_str(), static_cast<long long>(value), *rate);
    } else {
      std::printf("%s: %lld\n", readVar_->c_str(), static_cast<long long>(value));
    }
    lastValue_ = value;
    lastReadT_ = now;
    haveRead_ = true;
  }

  bool json_;
  std::optional<std::string> readVar_;
  std::vector<uint64_t> last_;
  double lastT_ = 0, lastReadT_ = 0;
  int64_t lastValue_ = 0;
  bool haveRead_ = false;
};

}  // namespace

int runCount(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs({{"read", 0, true, "read this global (e.g. main.counter) on each hit of the first function"},
                                 {"entry", 0, false, "probe the plain function entry, not the cheaper stack-check branch"}});
  for (auto& o : strategyOptionSpecs(false)) specs.push_back(o);
  auto args = orRaise(parseArgs("count", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope count (-p PID | -c 'CMD ARGS' | -b BINARY) [-i SECS] [-d SECS] [--read VAR] [--json] PATTERN...", specs);
    return 0;
  }
  ProbeRequest request = requestFromTraceArgs(args, Action::Count);
  request.locations = args.positional();
  if (request.locations.empty()) raise({ErrorKind::Usage, "count: name at least one function pattern, e.g. 'main.*'"});
  TracedTarget target = openTracedTarget(request);
  request.readVariable = args.get("read");
  request.plainEntry = args.has("entry");
  applyStrategyOptions(args, request);
  planOrRaise(args, request, target.binary(), request.target.pid);

  const bool json = args.has("json");
  auto session = orRaise(api::CountSession::start(std::move(target), request));
  std::fprintf(stderr, "%s\n", session->announcement().c_str());
  CountReporter reporter(json, session->readVariable());
  EndReason why = session->run([&](const api::CountSnapshot& s) { reporter.interval(s); });
  if (auto snap = session->snapshot()) reporter.totals(*snap, session->functionCount(), why);
  auto detached = session->detach();
  std::fprintf(stderr, "goscope: detached %zu probes in %.1f ms\n", detached.points, detached.ms);
  raiseIfTargetGone(session->target(), why);
  return 0;
}

}  // namespace goscope::cli
