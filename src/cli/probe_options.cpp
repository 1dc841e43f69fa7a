#include "cli/probe_options.hpp"

#include <unistd.h>

#include <chrono>

#include <cstdio>

#include "cli/target_options.hpp"
#include "cli/target_watch.hpp"
#include "api/goscope.hpp"
#include "process/target.hpp"
#include "util/progress.hpp"
#include "util/stop_signals.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

std::vector<OptionSpec> traceOptionSpecs(std::vector<OptionSpec> extra) {
  std::vector<OptionSpec> specs = {
      {"pid", 'p', true, "trace a running process"},
      {"command", 'c', true, "start 'CMD ARGS' and trace it from its first instruction (or: -- CMD ARGS, last); goscope exits with its status"},
      {"binary", 'b', true, "trace every process running this file, including later ones"},
      {"interval", 'i', true, "print a report every SECS seconds"},
      {"duration", 'd', true, "stop after SECS seconds"},
      {"json", 0, false, "one JSON object per line"},
      {"ignore-missing", 0, false, "go on when a pattern matches no function (by default that is an error, exit 5)"},
      {"strict", 0, false, "a -p target that exits is an error (exit 8), not the session's normal end (exit 0)"},
      kDebugFileOption,
      kDebugDirOption,
      {"help", 'h', false, "this help"},
  };
  specs.insert(specs.end(), extra.begin(), extra.end());
  return specs;
}

ProbeRequest requestFromTraceArgs(const Args& args, Action action) {
  applyDebugInfoOptions(args);
  ProbeRequest r;
  r.action = action;
  if (auto p = args.get("pid")) r.target.pid = watchTarget(orRaise(parsePid(*p)));
  if (auto c = args.get("command")) r.target.command = *c;
  // `-- CMD ARGS`: the command as words, as time and strace take it.
  if (args.hasDoubleDash()) {
    if (args.trailingCommand().empty())
      raise({ErrorKind::Usage, "-- needs a command after it", "e.g. goscope count main.add -- ./prog ARGS"});
    if (args.has("command"))
      raise({ErrorKind::Usage, "give the command once: -c 'CMD ARGS' or -- CMD ARGS, not both"});
    r.target.command = joinCommand(args.trailingCommand());
  }
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
  setProgressHook([last = std::chrono::steady_clock::time_point{}](const std::string& what, size_t done,
                                                                    size_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (done >= total) {
      output::eraseProgress();
      return;
    }
    if (now - last < std::chrono::milliseconds(100)) return;
    last = now;
    output::progressToStderr("goscope: " + what + ": " + std::to_string(done) + " of " + std::to_string(total) +
                             "... (Ctrl-C stops, nothing is left attached)");
  });
}


[[noreturn]] static void raiseExeced(const std::string& target, const std::string& newProgram) {
  raise({ErrorKind::TargetGone,
         target + " replaced its program during the session (exec" +
             (newProgram.empty() ? std::string() : " of " + newProgram) + "); the probes were in the old one",
         "everything recorded before the exec is printed above"});
}

// A -p target's exit ends the session normally (as bpftrace's does): a line
// saying so, exit 0; --strict makes it the error it was before (exit 8).
static int targetExited(const std::string& target, bool strict) {
  if (strict)
    raise({ErrorKind::TargetGone, target + " exited during the session",
           "everything recorded before it exited is printed above"});
  output::toStderr("goscope: %s exited; the session ended with it\n", target.c_str());
  return 0;
}

// A -c command that ends the session: goscope exits with its status, as
// time and strace do (128+N when a signal N killed it).
static int commandEnded(const std::string& target, std::optional<int> status) {
  if (!status || *status == 0) return 0;
  output::toStderr("goscope: %s exited with status %d; goscope exits with it\n", target.c_str(), *status);
  return *status;
}

int exitCodeAfter(const TracedTarget& target, EndReason why, bool strict) {
  if (why == EndReason::ProbesLost)
    raise({ErrorKind::External, "the link holder died: the kernel removed every probe, so the session ended early",
           "the counts printed above end there; run goscope again"});
  // A -c command that execs is no normal end either ("target exited"
  // would come only once the new program ended): the probes stopped
  // seeing it at the exec.
  if (why == EndReason::TargetExeced) raiseExeced(target.describe(), target.execedTo());
  if (why != EndReason::TargetExited || target.isBinaryWide()) return 0;
  if (target.isLaunched()) return commandEnded(target.describe(), target.commandExitStatus());
  return targetExited(target.describe(), strict);
}

int exitCodeAfter(const api::EventTotals& t, bool strict) {
  const bool exited = t.end == api::EventEnd::TargetExited && !t.targetIsBinaryWide;
  // A Delve session says how the target went in `failed`: under --strict that is the error.
  if (exited && !t.targetIsLaunched && !strict) return targetExited(t.target, false);
  if (t.failed) raise(*t.failed);
  if (t.detachFailed) raise(*t.detachFailed);
  if (t.end == api::EventEnd::TargetExeced) raiseExeced(t.target, t.execedTo);
  if (!exited) return 0;
  if (t.targetIsLaunched) return commandEnded(t.target, t.commandStatus);
  return targetExited(t.target, strict);
}

void printLineIfAny(const std::string& line) {
  if (!line.empty()) output::lineToStderr(line);
}

void printHiddenCalls(uint64_t calls) { printLineIfAny(api::hiddenCallsLine(calls)); }

void printDecodedWithoutBias(uint64_t events) {
  if (events)
    output::toStderr(
                 "goscope: %llu events decoded without the program's load address (it exited before its maps were "
                 "read, and no function entry gave it): their interface types and stack frames are not named\n",
                 static_cast<unsigned long long>(events));
}

void reportTimings(const api::DelveCosts& c, const char* note) {
  if (c.leftStopped) {  // stopped by the user before: no pause of goscope's to report
    output::toStderr(
                 "goscope: PID %d was stopped (state T) before the attach and is left stopped: it did not run; attach %.0f "
                 "ms, detach %.0f ms, %.0f ms end to end\n",
                 c.pid, c.attachMs, c.detachMs, c.totalMs);
    return;
  }
  output::toStderr("goscope: PID %d was stopped %.1f ms%s; attach %.0f ms, detach %.0f ms, %.0f ms end to end\n", c.pid,
               c.stoppedMs, note ? note : "", c.attachMs, c.detachMs, c.totalMs);
}

}  // namespace goscope::cli
