// goscope trace: one line per call — time, pid, goroutine, the function with
// its arguments decoded by their Go types, and its results at return. An
// event session (session/event_session.hpp) delivers the calls, on BPF or, when
// BPF cannot read what is asked (float arguments), on Delve; the output
// layer prints them. --folded counts stacks in the kernel instead (an
// aggregate session) and prints them for flame graphs.
#include <boost/json.hpp>

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>

#include "api/goscope.hpp"
#include "cli/command.hpp"
#include "cli/interval_report.hpp"
#include "cli/signature_specs.hpp"
#include "cli/strategy_options.hpp"
#include "cli/probe_options.hpp"
#include "output/clock_text.hpp"
#include "output/flame_svg.hpp"
#include "output/output.hpp"
#include "probe/abi_layout.hpp"
#include "probe/filter_expr.hpp"
#include "probe/signature_check.hpp"
#include "probe/signature_parse.hpp"
#include "util/plural.hpp"
#include "util/safe_dir.hpp"
#include "util/json_text.hpp"
#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

// What a stack-counting trace (--folded, --svg) prints and writes.
struct StackOutputs {
  bool folded = false;  // the folded lines on stdout
  bool json = false;    // ... as {"stack":[...],"count":N} objects
  std::optional<std::string> svgPath;
  std::string subtitle;  // the flame graph's: what was probed, where
  bool strict = false;   // --strict: a -p target's exit is exit 8
  bool intervals = false;  // -i: each interval's new stack counts, then the rest at the end
  double intervalS = 0;    // -i's length
};

// Prints folded lines: all of them, or (-i) each interval those counted
// since the last report, so the reports add up to the whole session (bcc's
// "print and clear"; the kernel's map keeps the totals for --svg).
class FoldedPrinter {
 public:
  explicit FoldedPrinter(const StackOutputs& to) : to_(to), out_(output::makeOutput(to.json)) {}

  // `last`: the session's end, after its interval reports: nothing new since
  // the last one (-d a whole number of intervals) prints nothing.
  void print(const std::map<std::string, uint64_t>& lines, const api::CountSnapshot& snap, bool last = false) {
    std::optional<output::Output::Interval> in;
    if (to_.intervals) {
      if (last && lastT_ > 0 && !anyFresh(lines)) return;
      in = intervalOf(snap, lastT_, to_.intervalS);
      // A reading that gave way to the session's end printed nothing: the
      // last report covers its interval too, and says so.
      if (last && to_.intervalS > 0) {
        const int covered = static_cast<int>(std::lround(in->lengthS / to_.intervalS));
        if (covered - 1 > in->skipped) {
          in->skipped = covered - 1;
          in->lateS = snap.intervalLateS;
          in->overdueS = std::max(snap.intervalOverdueS, in->lengthS - to_.intervalS);
          in->ownS = std::min(in->overdueS, snap.intervalOwnS + droppedOwnS_);
        }
      }
      out_->foldedInterval(*in);
    }
    for (const auto& [l, n] : lines) {
      auto& seen = printed_[l];
      const uint64_t fresh = n - std::min(n, seen);
      seen = n;
      if (fresh == 0) continue;
      out_->foldedStack(l, fresh, in);
    }
    lastT_ = snap.elapsedS;
    out_->flush();
  }

  // An interval's reading gave way to the session's end after `ownS` of
  // goscope's CPU: the last report covers it, and that work.
  void dropped(double ownS) { droppedOwnS_ += ownS; }

 private:
  bool anyFresh(const std::map<std::string, uint64_t>& lines) const {
    for (const auto& [l, n] : lines)
      if (auto it = printed_.find(l); it == printed_.end() || it->second < n) return true;
    return false;
  }

  const StackOutputs& to_;
  std::unique_ptr<output::Output> out_;
  std::map<std::string, uint64_t> printed_;  // what the reports so far covered, per line
  double lastT_ = 0;
  double droppedOwnS_ = 0;
};

// "12 of 48,000 hits (0.03%) without a recorded stack", or "" when none.
std::string lostStacksText(uint64_t lost, uint64_t hits) {
  if (lost == 0) return "";
  char share[48];
  std::snprintf(share, sizeof share, " (%.2g%%)", hits ? 100.0 * static_cast<double>(lost) / static_cast<double>(hits) : 100.0);
  return std::to_string(lost) + " of " + countOf(hits, "hit") + share + " without a recorded stack";
}

int printFolded(api::AggregateSession& session, const StackOutputs& to) {
  FoldedPrinter printer(to);
  std::function<void(const api::CountSnapshot&)> onInterval;
  if (to.intervals && to.folded)
    onInterval = [&](const api::CountSnapshot& snap) {
      const double cpuAtStart = threadCpuSeconds();
      if (auto lines = session.foldedStacks()) printer.print(*lines, snap);
      else printer.dropped(threadCpuSeconds() - cpuAtStart);
    };
  EndReason why = session.run(onInterval);
  // The probes off first: reading and naming every stack takes as long as
  // the stacks are many (a type checker's 120,000: half a minute on a loaded
  // machine), and neither the target nor a Ctrl-C should wait for it.
  session.detach();
  auto lines = orRaise(session.foldedStacks());
  if (to.folded) {
    auto end = session.snapshot();
    printer.print(lines, end ? *end : api::CountSnapshot{}, true);
  }
  // What was lost, said in the picture too: its [lost] frames show the share,
  // the subtitle says the figure.
  const std::string lostText = lostStacksText(session.lostStacks(), session.stackHits());
  if (to.svgPath) {
    // Created under a temporary name and renamed into place, in the
    // directory checked before the session (util/safe_dir.hpp).
    auto out = SafeDir::forOutputFile(*to.svgPath);
    if (!out)
      raise({ErrorKind::Usage, "trace: cannot write the flame graph to " + *to.svgPath + ": " + out.error().message,
             "give a writable path to --svg"});
    const std::string subtitle = lostText.empty() ? to.subtitle : to.subtitle + "; " + lostText;
    if (auto w = out->dir.writeFile(out->name, output::flameGraphSvg(lines, {"goscope trace flame graph", subtitle}));
        !w)
      raise({ErrorKind::Usage, "trace: cannot write the flame graph to " + *to.svgPath + ": " + w.error().message,
             "give a writable path to --svg"});
    output::toStderr("goscope: wrote a flame graph of %zu stacks to %s\n", lines.size(), to.svgPath->c_str());
  }
  output::noticeToStderr(describe(why));
  if (const uint64_t cut = session.cutStacks())
    output::toStderr(
                 "goscope: %llu hits had stacks deeper than the kernel records (127 frames): their lines start at "
                 "%s, where the outer frames are missing\n",
                 static_cast<unsigned long long>(cut), api::AggregateSession::kCutRoot);
  if (!lostText.empty())
    output::toStderr("goscope: %s, counted in the folded lines under %s\n", lostText.c_str(),
                 api::AggregateSession::kLostRoot);
  session.detach();
  printHiddenCalls(session.hiddenCalls());
  output::toStderr("goscope: %s\n", api::describe(session.cost()).c_str());
  return exitCodeAfter(session.target(), why, to.strict);
}

void printTotals(const api::EventTotals& t) {
  std::fflush(stdout);
  if (t.path == Backend::Delve) {
    output::toStderr("goscope: %lld calls in %.2f s; %s\n", t.calls, t.activeS,
                 t.failed && t.end != api::EventEnd::TargetExited ? "failed" : api::describe(t.end));
    reportTimings(t.costs);
    return;
  }
  if (const uint64_t lost = t.lostRingFull + t.lostBusy; lost > 0)
    output::toStderr("goscope: %llu events lost (ring buffer full: %llu, busy: %llu); raise nothing, narrow the pattern\n",
                 static_cast<unsigned long long>(lost), static_cast<unsigned long long>(t.lostRingFull),
                 static_cast<unsigned long long>(t.lostBusy));
  if (t.unfinished) output::toStderr("goscope: %zu calls had not returned when tracing ended\n", t.unfinished);
  if (t.sampledOut)
    output::toStderr("goscope: %llu calls not shown: the overhead bound sampled their events (see above)\n",
                 static_cast<unsigned long long>(t.sampledOut));
  // Their arguments, duration and stack were never seen: left out of the
  // lines and of -n, in text and JSON alike.
  if (t.unmatched)
    output::toStderr(
                 "goscope: %llu returns of calls already running when probes were attached: not shown (entered "
                 "before the attach)\n",
                 static_cast<unsigned long long>(t.unmatched));
  printDecodedWithoutBias(t.decodedWithoutBias);
  printHiddenCalls(t.hiddenCalls);
  // trace has always said "target exited" (break: "the target exited").
  output::toStderr("goscope: %s\n", t.end == api::EventEnd::TargetExited ? "target exited" : api::describe(t.end));
}

}  // namespace

int runTrace(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs({{"stack", 0, false, "print each call's user stack, symbolized"},
                                 {"folded", 0, false, "print stack counts in the folded format flame graphs read (with --json: {\"stack\":[...],\"count\":N})"},
                                 {"svg", 0, true, "write the stack counts as an interactive flame graph (SVG) to FILE"},
                                 {"count", 'n', true, "stop after N calls (as break -n)"},
                                 {"filter", 0, true, "only calls whose arguments pass EXPR, tested in the kernel: 'n > 40 && name == \"api\"', prefix: name =~ \"api*\""},
                                 {"max-string", 0, true, "bytes of each string to read (1-256, default 64)"},
                                 {"force-signature", 0, false, "use the signatures given even where the binary's DWARF disagrees"},
                                 {"entry", 0, false, "probe the plain function entry and its RETs, not the cheaper stack-check branch or call sites"}});
  for (auto& o : strategyOptionSpecs(true)) specs.push_back(o);
  // trace prints calls as they happen: an interval means something only to
  // the stack counts of --folded (alone, -i is refused).
  for (auto& o : specs)
    if (o.longName == "interval") o.help = "with --folded: print the stack counts of each SECS seconds";
  auto args = orRaise(parseArgs("trace", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope trace (-p PID | -c 'CMD ARGS' | -b BINARY) [--stack | --folded [-i SECS]] [--svg FILE] [-n N] [--filter EXPR] [-d SECS] [--json] SPEC...", specs)
              << "SPEC: a function pattern, or a signature for a stripped binary: 'main.add(x int, y int) int'\n";
    return 0;
  }
  const bool svg = args.has("svg");
  // --svg counts stacks as --folded does; both together print the lines and write the picture.
  const bool folded = args.has("folded") || svg, stack = args.has("stack"), json = args.has("json");
  if (args.has("folded") && stack) raise({ErrorKind::Usage, "trace: --stack and --folded do not go together"});
  if (svg && stack) raise({ErrorKind::Usage, "trace: --stack and --svg do not go together", "--svg draws the stacks --folded counts"});
  if (svg) {  // a path that cannot be written is said before the session, not after it
    if (auto out = SafeDir::forOutputFile(*args.get("svg")); !out)
      raise({ErrorKind::Usage, "trace: cannot write the flame graph to " + *args.get("svg") + ": " + out.error().message,
             "give a writable path to --svg"});
  }
  if (args.has("interval") && !folded)
    raise({ErrorKind::Usage, "trace: -i reports stack counts each interval, with --folded",
           "calls print as they happen; for counts each interval: goscope count -i SECS"});
  if (folded && args.has("count"))
    raise({ErrorKind::Usage, "trace: -n counts printed calls; --folded and --svg count stacks in the kernel",
           "use -d SECS to bound a --folded or --svg run"});

  // One request, two plans: BPF probes (arguments and results, the process
  // never stops) or, when BPF cannot read what is asked (floats in XMM
  // registers) or with --strategy delve, Delve breakpoints (arguments only).
  // --folded counts stacks in the kernel: that is a count.
  ProbeRequest request = requestFromTraceArgs(args, folded ? Action::Count : Action::Trace);
  if (folded) request.target.commandStdoutToStderr = true;  // stdout holds the folded lines only
  addLocations(args.positional(), request);
  if (request.locations.empty()) raise({ErrorKind::Usage, "trace: name at least one function pattern, e.g. 'main.*'"});
  request.capture.args = request.capture.results = !folded;
  request.capture.stack = stack || folded;
  request.capture.maxString = static_cast<uint16_t>(orRaise(args.getInt("max-string", 64, 1, kProbeMaxString)));
  request.maxHits = orRaise(args.getInt("count", 0, 1, 1'000'000'000));  // 0: no limit
  if (auto f = args.get("filter")) request.filter = orRaise(parseFilter(*f));
  request.plainEntry = args.has("entry");
  applyStrategyOptions(args, request);
  TracedTarget target = openTracedTarget(request);
  checkSignatures(request, target.binary(), args.has("force-signature"));
  Plan plan = planOrRaise(args, request, target);

  if (folded) {
    auto session = orRaise(api::AggregateSession::start(std::move(target), request, plan));
    printLineIfAny(session->accessNotice());
    output::lineToStderr(session->announcement());
    StackOutputs to{args.has("folded"), json, args.get("svg"), session->target().describe(), args.has("strict"),
                    args.has("interval"), request.intervalS};
    return printFolded(*session, to);
  }
  auto session = orRaise(api::startEventSession(request, plan, std::move(target), output::noticeToStderr));
  printLineIfAny(session->accessNotice());
  if (args.has("explain"))
    for (const auto& line : session->argumentSources()) output::noticeToStderr(line);
  output::lineToStderr(session->announcement());
  auto out = output::makeOutput(json);
  const bool delve = session->path() == Backend::Delve;
  // Lines are buffered (64 KB chunks, output/stdout_lines.hpp), but flushed
  // at least every 50 ms: a reader sees them soon, and a closed pipe
  // (`| head -1`) is noticed soon, which ends the session (the probes come
  // off at once). Each Delve hit stopped the process: it is shown at once.
  // The clock is read every 64 calls, and when the session waits for more
  // (onIdle), not per call. No signal is masked
  // here: the line buffer resumes a write a Ctrl-C interrupted.
  auto lastFlush = std::chrono::steady_clock::now();
  unsigned sinceClock = 0;
  session->onBound([&](const api::BoundAction& a) { out->bound(a); });
  session->onIdle([&] {
    const auto now = std::chrono::steady_clock::now();
    if (now - lastFlush > std::chrono::milliseconds(50)) {
      out->flush();
      lastFlush = now;
    }
  });
  api::EventTotals totals = session->run([&](const api::Call& c) {
    out->traceCall(c, stack);
    if (delve || ++sinceClock >= 64) {
      sinceClock = 0;
      const auto now = std::chrono::steady_clock::now();
      if (delve || now - lastFlush > std::chrono::milliseconds(50)) {
        out->flush();
        lastFlush = now;
      }
    }
    return out->open();
  });
  printTotals(totals);
  // The cost line on stderr; with --json the stream also ends with a
  // session_cost object (as count's and latency's do: the stream already
  // carries overhead_bound objects, so a reader picks calls by their keys).
  out->sessionCost(totals.cost);
  out->flush();
  return exitCodeAfter(totals, args.has("strict"));
}

}  // namespace goscope::cli
