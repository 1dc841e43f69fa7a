#include "cli/trace_delve.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <iostream>

#include "backend/delve/value_render.hpp"
#include "cli/delve_hits.hpp"
#include "cli/delve_options.hpp"
#include "probe/pattern.hpp"
#include "session/session_loop.hpp"
#include "strategy/strategy.hpp"
#include "util/json_text.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

constexpr size_t kMaxBreakpoints = kDelveMaxBreakpoints;
constexpr int kStackFrames = 16;
constexpr uint16_t kReturnArgument = 16;  // api.VariableReturnArgument

std::vector<std::string> matchingFunctions(const GoBinary& bin, const std::vector<std::string>& patternTexts) {
  std::vector<Pattern> patterns;
  for (const auto& p : patternTexts) patterns.push_back(orRaise(Pattern::parse(p)));
  std::vector<std::string> names;
  for (const auto& fn : bin.pclntab().functions())
    for (const auto& p : patterns)
      if (p.matches(fn.name)) {
        names.push_back(fn.name);
        break;
      }
  return names;
}

void printHit(const delve::BreakpointHit& h, pid_t pid, bool json, bool stack) {
  StopSignalsHeld held;  // a Ctrl-C must not cut a line (stdout would drop the rest)
  std::string text;
  boost::json::object args;
  for (const auto& a : h.captured.arguments) {
    if (a.flags & kReturnArgument) continue;  // not computed at the entry
    if (!text.empty()) text += ", ";
    text += a.name + "=" + delve::valueText(a);
    args[a.name] = delve::valueJson(a);
  }
  if (json) {
    boost::json::object o{{"func", h.function}, {"pid", pid}, {"goid", h.goroutineId},
                          {"ts_ns", static_cast<uint64_t>(monotonicSeconds() * 1e9)}, {"args", std::move(args)},
                          {"results", nullptr}, {"duration_ns", nullptr}};
    if (stack) {
      boost::json::array frames;
      for (const auto& f : h.captured.stacktrace)
        frames.push_back(boost::json::value((f.location.function ? f.location.function->name : "?") + " " + f.location.file +
                                            ":" + std::to_string(f.location.line)));
      o["stack"] = std::move(frames);
    }
    std::cout << jsonText(o) << std::endl;
    return;
  }
  std::cout << wallClock() << " pid=" << pid << " goid=" << h.goroutineId << " " << h.function << "(" << text << ")"
            << std::endl;
  if (stack)
    for (const auto& f : h.captured.stacktrace)
      std::cout << "    " << (f.location.function ? f.location.function->name : "?") << " " << f.location.file << ":"
                << f.location.line << std::endl;
}

}  // namespace

int runTraceWithDelve(const Args& args, const GoBinary& bin, const DelveTraceOptions& o) {
  auto names = matchingFunctions(bin, o.patterns);
  if (names.empty()) raise({ErrorKind::NoMatch, "trace: no function matches " + o.patterns.front()});
  if (names.size() > kMaxBreakpoints)
    raise({ErrorKind::Usage,
           "trace: " + std::to_string(names.size()) + " functions match; the Delve path sets at most " +
               std::to_string(kMaxBreakpoints) + " breakpoints",
           "narrow the pattern, or let BPF trace them: --strategy bpf"});
  const auto t0 = std::chrono::steady_clock::now();
  auto session = attachOrRaise(o.pid, args);
  auto hook = interruptOnStop(*session);
  CaptureParts parts;
  parts.args = true;
  parts.stack = o.stack ? kStackFrames : 0;
  std::vector<int64_t> ids;
  for (const auto& n : names) ids.push_back(orRaise(session->createBreakpoint(captureSpec(n, parts))).id);
  std::fprintf(stderr, "goscope: %zu Delve breakpoint(s) in PID %d (arguments at entry; results are not captured on this path); Ctrl-C to stop\n",
               ids.size(), o.pid);
  HitLoopResult loop = runHitLoop(*session, ids, 0, o.durationS, [&](const delve::BreakpointHit& h) {
    printHit(h, o.pid, o.json, o.stack);
    return static_cast<bool>(std::cout);
  });
  if (session->state() == delve::SessionState::Stopped)
    for (auto id : ids) (void)session->clearBreakpoint(id);
  auto detached = session->detach();
  std::fprintf(stderr, "goscope: %lld calls in %.2f s; %s\n", loop.hits, loop.activeS, describe(loop.end));
  reportTimings(*session, msSince(t0));
  if (loop.failed) raise(sessionError(o.pid, *loop.failed));
  orRaise(std::move(detached));
  return 0;
}

}  // namespace goscope::cli
