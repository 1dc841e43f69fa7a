#include "cli/probe_options.hpp"

#include <unistd.h>

#include <chrono>

#include <cstdio>

#include "cli/target_watch.hpp"
#include "api/goscope.hpp"
#include "target/target.hpp"
#include "util/progress.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

std::vector<OptionSpec> traceOptionSpecs(std::vector<OptionSpec> extra) {
  std::vector<OptionSpec> specs = {
      {"pid", 'p', true, "trace a running process"},
      {"command", 'c', true, "start 'CMD ARGS' and trace it from its first instruction"},
      {"binary", 'b', true, "trace every process running this file, including later ones"},
      {"interval", 'i', true, "print a report every SECS seconds"},
      {"duration", 'd', true, "stop after SECS seconds"},
      {"json", 0, false, "one JSON object per line"},
      {"ignore-missing", 0, false, "go on when a pattern matches no function (by default that is an error, exit 5)"},
      {"help", 'h', false, "this help"},
  };
  specs.insert(specs.end(), extra.begin(), extra.end());
  return specs;
}

ProbeRequest requestFromTraceArgs(const Args& args, Action action) {
  ProbeRequest r;
  r.action = action;
  if (auto p = args.get("pid")) r.target.pid = watchTarget(orRaise(parsePid(*p)));
  if (auto c = args.get("command")) r.target.command = *c;
  if (auto b = args.get("binary")) r.target.binary = *b;
  r.target.commandStdoutToStderr = args.has("json");
  if (args.has("interval")) r.intervalS = orRaise(args.getSeconds("interval", 1));
  if (args.has("duration")) r.durationS = orRaise(args.getSeconds("duration", 0));
  r.ignoreMissing = args.has("ignore-missing");
  return r;
}

TracedTarget openTracedTarget(ProbeRequest& request) {
  // count, latency and trace name function patterns: parsed here, once, for
  // every stage after (break's locations may be Delve's: file.go:12).
  if (request.action == Action::Count || request.action == Action::Latency || request.action == Action::Trace)
    orRaise(parseLocations(request));
  TracedTarget t = orRaise(api::openTarget(request));
  installStopSignals();
  showProgressOnTerminal();
  return t;
}

void showProgressOnTerminal() {
  if (!::isatty(STDERR_FILENO)) return;
  // One line, rewritten in place at most ten times a second, erased when done.
  setProgressHook([last = std::chrono::steady_clock::time_point{}, shown = false](
                      const std::string& what, size_t done, size_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done >= total) {
      if (shown) std::fprintf(stderr, "\r\033[K");
      shown = false;
      return;
    }
    if (now - last < std::chrono::milliseconds(100)) return;
    last = now;
    shown = true;
    std::fprintf(stderr, "\rgoscope: %s: %zu of %zu... (Ctrl-C stops, nothing is left attached)\033[K", what.c_str(),
                 done, total);
  });
}

void printNotice(const std::string& line) { std::fprintf(stderr, "goscope: %s\n", line.c_str()); }

[[noreturn]] static void raiseExeced(const std::string& target, const std::string& newProgram) {
  raise({ErrorKind::TargetGone,
         target + " replaced its program during the session (exec" +
             (newProgram.empty() ? std::string() : " of " + newProgram) + "); the probes were in the old one",
         "everything recorded before the exec is printed above"});
}

void raiseIfTargetGone(const TracedTarget& target, EndReason why) {
  if (why == EndReason::ProbesLost)
    raise({ErrorKind::External, "the link holder died: the kernel removed every probe, so the session ended early",
           "the counts printed above end there; run goscope again"});
  // A -c command that execs is no normal end either (it used to read
  // "target exited" once the new program ended): the probes stopped
  // seeing it at the exec.
  if (why == EndReason::TargetExeced) raiseExeced(target.describe(), target.execedTo());
  if (target.isLaunched() || target.isBinaryWide()) return;
  if (why == EndReason::TargetExited)
    raise({ErrorKind::TargetGone, target.describe() + " exited during the session",
           "everything recorded before it exited is printed above"});
}

void raiseIfSessionFailed(const api::EventTotals& t) {
  if (t.failed) raise(*t.failed);
  if (t.detachFailed) raise(*t.detachFailed);
  if (t.end == api::EventEnd::TargetExeced) raiseExeced(t.target, t.execedTo);
  if (t.targetIsLaunched || t.targetIsBinaryWide) return;
  if (t.end == api::EventEnd::TargetExited)
    raise({ErrorKind::TargetGone, t.target + " exited during the session",
           "everything recorded before it exited is printed above"});
}

void printLineIfAny(const std::string& line) {
  if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
}

void printHiddenCalls(uint64_t calls) { printLineIfAny(api::hiddenCallsLine(calls)); }

void reportTimings(const api::DelveCosts& c, const char* note) {
  if (c.leftStopped) {  // stopped by the user before: no pause of goscope's to report
    std::fprintf(stderr,
                 "goscope: PID %d was stopped (state T) before the attach and is left stopped: it did not run; attach %.0f "
                 "ms, detach %.0f ms, %.0f ms end to end\n",
                 c.pid, c.attachMs, c.detachMs, c.totalMs);
    return;
  }
  std::fprintf(stderr, "goscope: PID %d was stopped %.1f ms%s; attach %.0f ms, detach %.0f ms, %.0f ms end to end\n", c.pid,
               c.stoppedMs, note ? note : "", c.attachMs, c.detachMs, c.totalMs);
}

}  // namespace goscope::cli
