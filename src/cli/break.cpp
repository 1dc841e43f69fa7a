// goscope break: a Delve breakpoint that captures on every hit, until -n
// hits, -d seconds or Ctrl-C. Each hit stops the whole process for a round
// trip to dlv, so this is for functions called a few hundred times a second
// at most; the hit rate at the end shows what the target could still do.
#include <boost/json.hpp>

#include <cstdio>
#include <iostream>

#include "cli/command.hpp"
#include "cli/delve_hits.hpp"
#include "cli/delve_options.hpp"
#include "util/json_text.hpp"

namespace goscope::cli {

namespace {

enum class BreakEnd { Count, Duration, Signal };

const char* describe(BreakEnd e) {
  switch (e) {
    case BreakEnd::Count: return "hit count reached";
    case BreakEnd::Duration: return "duration reached";
    case BreakEnd::Signal: return "interrupted";
  }
  return "";
}

// Prints each hit as it comes, so that what was recorded survives any end.
class HitPrinter {
 public:
  HitPrinter(CaptureParts parts, bool json) : parts_(std::move(parts)), json_(json) {}

  void print(const delve::BreakpointHit& h) {
    auto now = std::chrono::system_clock::now();
    if (json_) {
      boost::json::object o{{"time", isoTime(now)}, {"hit", ++count_}};
      for (auto& kv : hitJson(h, parts_)) o[kv.key()] = std::move(kv.value());
      std::cout << jsonText(o) << std::endl;
    } else {
      ++count_;
      std::cout << clockText(now) << ' ' << hitText(h, parts_) << std::endl;
    }
    // Nobody reads any more (`| head`): stop holding the target for nothing.
    if (!std::cout) requestStop();
  }
  long long count() const { return count_; }

 private:
  CaptureParts parts_;
  bool json_;
  long long count_ = 0;
};

}  // namespace

int runBreak(const std::vector<std::string>& argv) {
  auto specs = delveOptionSpecs({
      {"args", 0, false, "capture the function's arguments"},
      {"locals", 0, false, "capture its local variables"},
      {"stack", 0, true, "capture N stack frames"},
      {"cond", 0, true, "stop only when this Go expression is true (e.g. 'i == 7')"},
      {"count", 'n', true, "stop after COUNT hits"},
      {"duration", 'd', true, "stop after SECS seconds"},
  });
  auto args = orRaise(parseArgs("break", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope break -p PID FUNC [EXPR...] [--args] [--locals] [--stack N] [--cond EXPR] "
                         "[-n COUNT] [-d SECS] [--json]",
                         specs);
    return 0;
  }
  const auto& pos = args.positional();
  if (pos.empty()) raise({ErrorKind::Usage, "break: name a function, e.g. main.doWork"});
  CaptureParts parts;
  parts.exprs.assign(pos.begin() + 1, pos.end());
  parts.args = args.has("args");
  parts.locals = args.has("locals");
  parts.stack = static_cast<int>(orRaise(args.getInt("stack", 0, 1, 100)));
  const long long maxHits = orRaise(args.getInt("count", 0, 1, 1'000'000'000));
  const double durationS = args.has("duration") ? orRaise(args.getSeconds("duration", 0)) : 0;
  pid_t pid = delvePidOrRaise(args, "break");

  const auto t0 = std::chrono::steady_clock::now();
  auto session = attachOrRaise(pid, args);
  auto hook = interruptOnStop(*session);
  if (auto e = syntaxError(*session, parts.exprs)) raise(*e);
  delve::BreakpointSpec spec = captureSpec(pos[0], parts);
  spec.cond = args.get("cond").value_or("");
  auto bp = orRaise(session->createBreakpoint(spec));
  const std::string when = spec.cond.empty() ? "" : ", when " + spec.cond;
  std::fprintf(stderr, "goscope: breakpoint at %s (%s:%lld) in PID %d%s; Ctrl-C to stop\n", pos[0].c_str(),
               bp.file.c_str(), static_cast<long long>(bp.line), pid, when.c_str());

  HitPrinter printer(parts, args.has("json"));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<long long>(durationS * 1000));
  BreakEnd end = BreakEnd::Signal;
  std::optional<Error> failed;
  for (;;) {
    if (stopRequested()) break;
    auto wait = durationS > 0 ? std::chrono::duration_cast<delve::Millis>(deadline - std::chrono::steady_clock::now())
                              : delve::Millis(24LL * 3600 * 1000);
    if (wait.count() <= 0) {
      end = BreakEnd::Duration;
      break;
    }
    auto ev = session->continueToBreakpoint(wait);
    if (!ev) {
      if (!stopRequested()) failed = ev.error();
      break;
    }
    if (ev->timedOut) {
      end = BreakEnd::Duration;
      break;
    }
    bool done = false;
    for (const auto& h : ev->hits) {  // none: Delve stopped for itself; continue again
      if (h.breakpointId != bp.id) continue;
      if (printer.count() == 0) failed = captureError(h);
      if (failed) break;
      printer.print(h);
      if (maxHits > 0 && printer.count() >= maxHits) {
        end = BreakEnd::Count;
        done = true;
        break;
      }
    }
    if (done || failed) break;
  }
  const double activeS = msSince(start) / 1000;

  // Clear before detaching when we can (stopped); detach clears it otherwise.
  if (session->state() == delve::SessionState::Stopped) (void)session->clearBreakpoint(bp.id);
  auto detached = session->detach();
  std::fprintf(stderr, "goscope: %lld hits in %.2f s (%.1f hits/s)%s\n", printer.count(), activeS,
               activeS > 0 ? printer.count() / activeS : 0.0, failed ? "" : ("; " + std::string(describe(end))).c_str());
  // Delve also stops the target at every trap it resumes by itself (a
  // condition that is false): goscope does not see those.
  reportTimings(*session, msSince(t0), spec.cond.empty() ? nullptr : " (plus Delve's own stops to test --cond)");
  if (failed) raise(sessionError(pid, *failed));
  orRaise(std::move(detached));
  return 0;
}

}  // namespace goscope::cli
