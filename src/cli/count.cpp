// goscope count: call counts of every matching function, counted in the
// kernel (a per-CPU array; nothing crosses to user space per hit), read each
// interval and at the end. `--read VAR` also reads a global on each hit of
// the first function and reports its value and rate, as the talks' counter
// demo did.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/interval_report.hpp"
#include "cli/signature_specs.hpp"
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "cli/prometheus_option.hpp"
#include "output/output.hpp"
#include "probe/filter_expr.hpp"
#include "util/plural.hpp"
#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

// Turns what AggregateSession snapshots into report rows: per interval the
// active functions and their rates, at the end the totals; with --read, the
// global's value and its own rate of change. The output layer prints them.
class CountReporter {
 public:
  // `json`: the JSON totals end with the global's last read (the text totals do not).
  // `top`: rows shown per report, 0: all.
  CountReporter(output::Output& out, std::optional<std::string> readVar, size_t top, double intervalS)
      : out_(out), readVar_(std::move(readVar)), top_(top), intervalS_(intervalS) {}

  void interval(const api::CountSnapshot& snap) {
    if (last_.size() != snap.functions.size()) last_.assign(snap.functions.size(), 0);
    double now = snap.elapsedS, dt = std::max(1e-9, now - lastT_);
    std::vector<output::Output::CountRow> rows;
    for (size_t i = 0; i < snap.functions.size(); i++) {
      const auto& f = snap.functions[i];
      uint64_t delta = f.count - last_[i];
      last_[i] = f.count;
      if (delta == 0 && snap.functions.size() > 1) continue;  // many functions: show the active ones
      rows.push_back({f.func, f.count, delta, static_cast<double>(delta) / dt, now});
    }
    // Most called in this interval first (bcc funccount -i sorts by count).
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.delta != b.delta ? a.delta > b.delta : a.func < b.func; });
    const size_t omitted = keepTop(rows);
    auto in = intervalOf(snap, lastT_, intervalS_, omitted);
    cost_.fill(snap, in);
    out_.countInterval(in, rows);
    if (readVar_) printRead(snap);
    out_.intervalEnd(in);
    lastT_ = now;
    out_.flush();
  }

  // With --read, the variable's last value follows the totals (with its
  // rate when intervals came before).
  void totals(const api::CountSnapshot& snap) {
    std::vector<output::Output::CountTotal> rows;
    for (const auto& f : snap.functions)
      if (f.count > 0 || snap.functions.size() == 1) rows.push_back({f.func, f.count, f.droppedAtS});
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.count != b.count ? a.count > b.count : a.func < b.func; });
    size_t omitted = keepTop(rows);
    out_.countTotals(rows, omitted);
    if (readVar_) printRead(snap);
    out_.flush();
  }

 private:
  // Cuts `rows` (sorted) to --top's N; returns how many were cut.
  template <typename Row>
  size_t keepTop(std::vector<Row>& rows) const {
    if (top_ == 0 || rows.size() <= top_) return 0;
    size_t cut = rows.size() - top_;
    rows.resize(top_);
    return cut;
  }

  void printRead(const api::CountSnapshot& snap) {
    if (!snap.readValue) {
      out_.globalRead(*readVar_, std::nullopt, std::nullopt, snap.elapsedS);
      return;
    }
    int64_t value = *snap.readValue;
    double now = snap.elapsedS;
    // The variable's own rate of change between two reports (the first report
    // has nothing to compare with).
    std::optional<long long> rate;
    // The totals' reading is the last interval's when -d ended on one: the
    // same moment, so the same rate, not a rate over no time.
    if (haveRead_ && now - lastReadT_ < 1e-3) rate = lastRate_;
    else if (haveRead_) rate = std::llround(static_cast<double>(value - lastValue_) / (now - lastReadT_));
    out_.globalRead(*readVar_, value, rate, now);
    lastValue_ = value;
    lastReadT_ = now;
    lastRate_ = rate;
    haveRead_ = true;
  }

  output::Output& out_;
  std::optional<std::string> readVar_;
  size_t top_;
  double intervalS_;
  std::vector<uint64_t> last_;
  IntervalCost cost_;
  double lastT_ = 0, lastReadT_ = 0;
  int64_t lastValue_ = 0;
  std::optional<long long> lastRate_;
  bool haveRead_ = false;
};

}  // namespace

int runCount(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs({{"read", 0, true, "read this global (e.g. main.counter) on each hit of the first function"},
                                 {"entry", 0, false, "probe the plain function entry, not the cheaper stack-check branch or call sites"},
                                 {"top", 0, true, "show only the N most called functions in each report and in the totals"},
                                 {"filter", 0, true, "count only calls whose arguments pass EXPR, tested in the kernel: 'n > 40', 'name =~ \"api*\"'"}});
  for (auto& o : strategyOptionSpecs(false, true)) specs.push_back(o);
  specs.push_back(prometheusOptionSpec());
  auto args = orRaise(parseArgs("count", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope count (-p PID | -c 'CMD ARGS' | -b BINARY) [-i SECS [--top N]] [-d SECS] [--read VAR] [--filter EXPR] [--json] PATTERN...", specs);
    return 0;
  }
  const auto top = static_cast<size_t>(orRaise(args.getInt("top", 0, 1, 1000000)));  // 0: all
  ProbeRequest request = requestFromTraceArgs(args, Action::Count);
  if (args.positional().empty()) raise({ErrorKind::Usage, "count: name at least one function pattern, e.g. 'main.*'"});
  addLocations(args.positional(), request);  // a pattern, or a signature as trace takes it (--filter then names its arguments)
  if (auto f = args.get("filter")) request.filter = orRaise(parseFilter(*f));  // before a -c command starts
  auto exporter = listenIfAsked(args);
  TracedTarget target = openTracedTarget(request);
  checkSignatures(request, target.binary(), false);
  request.readVariable = args.get("read");
  request.plainEntry = args.has("entry");
  applyStrategyOptions(args, request);
  const Plan plan = planOrRaise(args, request, target);

  const bool json = args.has("json");
  auto session = orRaise(api::AggregateSession::start(std::move(target), request, plan));
  printLineIfAny(session->accessNotice());
  output::lineToStderr(session->announcement());
  PrometheusServing serving(exporter.get(), *session);
  auto out = output::makeOutput(json);
  CountReporter reporter(*out, session->readVariable(), top, request.intervalS);
  session->onBound([&](const api::BoundAction& a) { out->bound(a); });
  EndReason why = session->run([&](const api::CountSnapshot& s) {
    reporter.interval(s);
    if (!out->open()) session->stop();  // nobody reads any more (`| head`): the probes come off now
  });
  // The reading taken as the session ended, printed before the detach
  // (which can take seconds on a loaded machine) and said apart after it.
  auto snap = session->snapshot();
  if (snap) reporter.totals(*snap);
  if (!json) output::toStderr("goscope: %s; %s probed\n", describe(why).c_str(), countOf(session->functionCount(), "function").c_str());
  if (snap) printEndLate(*snap, request.durationS);
  auto detached = session->detach();
  output::toStderr("goscope: detached %s in %.1f ms\n", countOf(detached.points, "probe").c_str(), detached.ms);
  printHiddenCalls(session->hiddenCalls());
  out->sessionCost(session->cost());
  out->flush();
  return exitCodeAfter(session->target(), why, args.has("strict"));
}

}  // namespace goscope::cli
