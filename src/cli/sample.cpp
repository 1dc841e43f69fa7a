// goscope sample: the low-frequency controller. Once per interval, with the
// target running: halt, set a breakpoint at FUNC that captures the
// expressions, continue until it hits (or a timeout: a miss), record, clear,
// continue. Between samples the target runs with no breakpoint at all, so
// it pays only the few milliseconds of each pause, which each record shows.
#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include "cli/command.hpp"
#include "output/output.hpp"
#include "cli/delve_options.hpp"
#include "cli/strategy_options.hpp"
#include "target/target.hpp"
#include "util/json_text.hpp"

namespace goscope::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  int index = 0;
  std::optional<delve::BreakpointHit> hit;  // nullopt: FUNC was not called in time
  double pauseMs = 0;                        // the target stopped for this sample
};

class SamplePrinter {
 public:
  SamplePrinter(api::CaptureParts parts, std::string func, double timeoutS, bool json, pid_t pid, Clock::time_point start)
      : parts_(std::move(parts)), shape_{!parts_.exprs.empty(), parts_.args, parts_.locals, parts_.stack},
        func_(std::move(func)), timeoutS_(timeoutS), out_(output::makeOutput(json)), pid_(pid), start_(start) {}

  void print(const Sample& s) {
    std::optional<api::Call> call;
    if (s.hit) call = api::callFromHit(*s.hit, parts_, pid_);
    out_->sample({s.index, msSince(start_) / 1000, s.pauseMs, call ? &*call : nullptr, func_, timeoutS_}, shape_);
    if (!out_->open()) requestStop();  // nobody reads any more (`| head`)
  }

 private:
  api::CaptureParts parts_;
  output::HitShape shape_;
  std::string func_;
  double timeoutS_;
  std::unique_ptr<output::Output> out_;
  pid_t pid_;
  Clock::time_point start_;
};

// Sleeps until `until` while the target runs, waking to notice a stop
// signal; false when one came.
bool sleepUntil(Clock::time_point until) {
  while (Clock::now() < until) {
    if (stopRequested()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
  }
  return !stopRequested();
}

// One sample from a stopped or running target; leaves it running. The
// breakpoint exists only inside this function.
Result<Sample> takeSample(delve::DelveSession& s, const delve::BreakpointSpec& spec, delve::Millis timeout) {
  Sample out;
  const double stoppedBefore = s.timings().stoppedMs;
  if (auto h = s.halt(); !h) return h.failure();
  auto bp = s.createBreakpoint(spec);
  if (!bp) return bp.failure();
  Result<delve::StopEvent> ev = fail(ErrorKind::Internal, "no continue");
  const auto deadline = Clock::now() + timeout;
  for (;;) {  // a stop with no hit of ours and no timeout: continue again
    auto left = std::chrono::duration_cast<delve::Millis>(deadline - Clock::now());
    ev = s.continueToBreakpoint(std::max(left, delve::Millis(1)));
    if (!ev || ev->timedOut || !ev->hits.empty()) break;
  }
  if (!ev) return ev.failure();
  for (const auto& h : ev->hits)
    if (h.breakpointId == bp->id) out.hit = h;
  if (auto c = s.clearBreakpoint(bp->id); !c) return c.failure();
  if (auto r = s.resume(); !r) return r.failure();
  out.pauseMs = s.timings().stoppedMs - stoppedBefore;
  return out;
}

}  // namespace

int runSample(const std::vector<std::string>& argv) {
  auto specs = delveOptionSpecs({
      {"at", 0, true, "the function whose next call is sampled"},
      {"args", 0, false, "capture its arguments too"},
      {"interval", 'i', true, "one sample every SECS seconds (default 1)"},
      {"duration", 'd', true, "stop after SECS seconds"},
      {"timeout", 0, true, "a miss when FUNC is not called within SECS (default: the interval)"},
      {"strategy", 0, true, "auto (default) or delve: sampling is Delve's"},
      {"explain", 0, false, "print the plan, and every reason behind it, on stderr"},
  });
  auto args = orRaise(parseArgs("sample", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope sample -p PID --at FUNC [EXPR...] [--args] [-i SECS] [-d SECS] [--json]", specs);
    return 0;
  }
  auto at = args.get("at");
  if (!at) raise({ErrorKind::Usage, "sample: name the function to sample at: --at FUNC"});
  api::CaptureParts parts;
  parts.exprs = args.positional();
  parts.args = args.has("args");
  if (parts.exprs.empty() && !parts.args)
    raise({ErrorKind::Usage, "sample: name at least one expression (e.g. main.counter) or --args"});
  const double intervalS = orRaise(args.getSeconds("interval", 1));
  const double durationS = args.has("duration") ? orRaise(args.getSeconds("duration", 0)) : 0;
  const double timeoutS = orRaise(args.getSeconds("timeout", intervalS));
  pid_t pid = delvePidOrRaise(args, "sample");
  {
    ProbeRequest request;
    request.action = Action::Sample;
    request.target.pid = pid;
    request.locations = {*at};
    request.capture.exprs = parts.exprs;
    request.capture.args = parts.args;
    request.intervalS = intervalS;
    request.durationS = durationS;
    request.dlvArgs = args.all("dlv-arg");
    applyStrategyOptions(args, request);
    planOrRaise(args, request, *openProcessForPlanning(pid).binary, pid);
  }

  const auto t0 = Clock::now();
  auto session = attachOrRaise(pid, args);
  auto hook = interruptOnStop(*session);
  if (auto e = api::syntaxError(*session, parts.exprs)) raise(*e);
  // A location that does not resolve is an error now, not a miss later.
  auto where = orRaise(session->findLocation(*at));
  if (where.size() != 1)
    raise({where.empty() ? ErrorKind::NoMatch : ErrorKind::Usage,
           "--at " + *at + " matches " + std::to_string(where.size()) + " places", "name one function or file:line"});
  const delve::BreakpointSpec spec = api::captureSpec(*at, parts);
  std::fprintf(stderr, "goscope: sampling PID %d at %s every %g s; Ctrl-C to stop\n", pid, at->c_str(), intervalS);

  // The first sample starts at once: the attach left the target stopped.
  const auto start = Clock::now();
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(intervalS));
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(durationS));
  const auto timeout = delve::Millis(std::max<long long>(1, std::llround(timeoutS * 1000)));
  SamplePrinter printer(parts, *at, timeoutS, args.has("json"), pid, start);
  int taken = 0, misses = 0;
  double pauseSum = 0, pauseMax = 0;
  std::optional<Error> failed;
  for (auto next = start; durationS <= 0 || next < end; next += interval) {
    if (!sleepUntil(next)) break;
    auto s = takeSample(*session, spec, timeout);
    if (!s) {
      if (!stopRequested()) failed = s.error();
      break;
    }
    s->index = ++taken;
    if (s->hit && !failed) failed = api::captureError(*s->hit);
    if (failed) break;
    misses += !s->hit;
    pauseSum += s->pauseMs;
    pauseMax = std::max(pauseMax, s->pauseMs);
    printer.print(*s);
    if (Clock::now() > next + interval) next = Clock::now() - interval;  // fell behind: no burst
  }

  auto detached = session->detach();
  std::fprintf(stderr, "goscope: %d samples (%d misses); pause per sample %.1f ms on average, %.1f ms at most\n", taken,
               misses, taken ? pauseSum / taken : 0.0, pauseMax);
  reportTimings(*session, msSince(t0));
  if (failed) raise(sessionError(pid, *failed));
  orRaise(std::move(detached));
  return 0;
}

}  // namespace goscope::cli
