#include "session/delve_capture.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "rpc/delve_errors.hpp"
#include "process/ptrace_privileges.hpp"
#include "process/run_state.hpp"
#include "session/session_loop.hpp"
#include "process/target.hpp"
#include "util/stop_signals.hpp"
#include "backend/delve/delve_finder.hpp"
#include "backend/delve/dlv_startup.hpp"
#include "backend/delve/values_from_delve.hpp"

namespace goscope::session {

namespace {

constexpr uint16_t kReturnArgument = 16;  // api.VariableReturnArgument

// Delve needs DWARF; without it dlv fails after loading the binary with a
// message that does not say what to do instead.
Result<void> requireDwarf(pid_t pid, const GoBinary& bin, const std::string& who) {
  if (bin.hasEmbeddedDwarf()) return {};
  if (bin.hasDwarf())
    return fail(ErrorKind::BadTarget,
                who + " has its DWARF in a separate debug file (" + bin.debugInfoOrigin().path +
                    "): Delve cannot use it, it reads only the executable's own",
                "the BPF path (goscope count/latency/trace -p " + std::to_string(pid) +
                    ") and direct reads of package variables use the debug file; Delve needs the unstripped build");
  return fail(ErrorKind::BadTarget, who + " has no DWARF debug info (stripped): Delve cannot read its variables",
              "the BPF path works on it: goscope count/latency/trace -p " + std::to_string(pid) +
                  "; Delve needs a build without -ldflags='-s -w'");
}

std::vector<Value> values(const std::vector<rpc::Variable>& vars, bool argumentsOnly) {
  std::vector<Value> out;
  for (const auto& v : vars) {
    if (argumentsOnly && (v.flags & kReturnArgument)) continue;  // at the entry results are not computed yet
    Value x = valueFromDelve(v);
    x.name = v.name;
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<delve::DelveSession>> attachDelve(pid_t pid, const DelveRequest& dlv, const TracedTarget* target,
                                                        const char* needsRunning) {
  // Before anything is read or started: whether dlv may ptrace it at all
  // (a missing capability, Yama, another user, another debugger already on it).
  if (auto ok = checkPtracePrivileges(pid); !ok) return ok.failure();
  if (needsRunning && runStateOf(pid) == RunState::Stopped) return fail(stoppedTargetRefusal(pid, needsRunning));
  std::optional<Target> opened;
  if (!target) {
    auto t = openProcessTarget(pid);
    if (!t) return t.failure();
    opened = std::move(*t);
  }
  const GoBinary& bin = target ? target->binary() : *opened->binary;
  if (auto ok = requireDwarf(pid, bin, target ? target->describe() : opened->describe()); !ok) return ok.failure();
  delve::DelveOptions options;
  options.extraArgs = dlv.args;
  // The dlv whose window covers the target's Go release (delve_finder.hpp).
  const BuildInfo* bi = bin.buildInfo();
  delve::DelveChoice choice = delve::chooseDelve(dlv.path, bi ? bi->goVersion : std::string());
  spdlog::debug("delve: {}", choice.why);
  if (!choice.chosen) {
    Error e = delve::dlvNotFound(choice.tried);
    if (!choice.hint.empty()) e.hint = choice.hint + "; or " + e.hint;
    return fail(e);
  }
  options.dlvPath = choice.chosen->path;
  options.program = bin.elf().identity();
  options.fetchHint = choice.covers ? std::string() : choice.hint;
  auto s = delve::DelveSession::attach(pid, options);
  if (!s) {
    Error e = s.error();
    // The one refusal a user can override, at their own risk.
    if (e.message.find("outside what the installed Delve") != std::string::npos)
      e.hint += "; or try anyway: --dlv-arg=--check-go-version=false";
    return fail(e);
  }
  return std::move(*s);
}

StopHookScope interruptOnStop(delve::DelveSession& session) {
  return StopHookScope([](void* s) { static_cast<delve::DelveSession*>(s)->interrupt(); }, &session);
}

delve::BreakpointSpec captureSpec(const std::string& location, const CaptureParts& parts) {
  delve::BreakpointSpec spec;
  spec.location = location;
  spec.variables = parts.exprs;
  spec.args = parts.args;
  spec.locals = parts.locals;
  // One frame more than shown: its presence says the stack was cut.
  spec.stackDepth = parts.stack > 0 ? parts.stack + 1 : 0;
  spec.load = loadConfigOf(parts.limits);
  return spec;
}

rpc::LoadConfig loadConfigOf(const ReadLimits& l) {
  return {true, l.maxDepth, static_cast<int64_t>(l.maxString), static_cast<int64_t>(l.maxElements), -1};
}

std::optional<Error> captureError(const delve::BreakpointHit& h) {
  for (const auto& v : h.captured.variables) {
    if (v.unreadable.empty()) continue;
    Error e = rpc::delveError("Eval", v.unreadable);
    if (e.kind == ErrorKind::NoMatch || e.kind == ErrorKind::Usage) {
      e.message = v.name + ": " + e.message;
      return e;
    }
  }
  return std::nullopt;
}

std::optional<Error> syntaxError(delve::DelveSession& session, const std::vector<std::string>& exprs) {
  for (const auto& e : exprs) {
    auto v = session.eval(e, rpc::LoadConfig{false, 0, 0, 0, 0});
    if (!v && v.error().message.rfind("Delve cannot parse", 0) == 0) {
      Error err = v.error();
      err.message = e + ": " + err.message;
      return err;
    }
  }
  return std::nullopt;
}

Call callFromHit(const delve::BreakpointHit& h, const CaptureParts& parts, pid_t pid) {
  Call c;
  c.function = h.function;
  c.file = h.file;
  c.line = h.line;
  c.pid = static_cast<uint32_t>(pid);
  c.goid = h.goroutineId;
  c.tsNs = static_cast<uint64_t>(monotonicSeconds() * 1e9);
  if (parts.args) c.args = values(h.captured.arguments, true);
  c.exprs = valuesOfExpressions(h.captured.variables, parts.exprs);  // labelled as typed
  if (parts.locals) c.locals = values(h.captured.locals, false);
  for (size_t i = 0; i < h.captured.stacktrace.size() && i < static_cast<size_t>(parts.stack); ++i) {
    const auto& f = h.captured.stacktrace[i];
    c.stack.push_back(Frame{f.location.pc, f.location.function ? f.location.function->name : "?", f.location.file,
                            f.location.line, true, false});
  }
  c.stackCut = parts.stack > 0 && h.captured.stacktrace.size() > static_cast<size_t>(parts.stack);
  return c;
}

HitLoopResult runHitLoop(delve::DelveSession& session, const std::vector<int64_t>& ids, long long maxHits,
                         double durationS, const std::function<bool(const delve::BreakpointHit&)>& onHit,
                         const std::atomic<bool>* stop,
                         const std::function<delve::BreakpointHit(const delve::BreakpointHit&)>& complete) {
  HitLoopResult r;
  auto stopped = [stop] { return stopRequested() || (stop && *stop); };
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<long long>(durationS * 1000));
  for (;;) {
    if (stopped()) break;
    auto wait = durationS > 0 ? std::chrono::duration_cast<delve::Millis>(deadline - std::chrono::steady_clock::now())
                              : delve::Millis(24LL * 3600 * 1000);
    if (wait.count() <= 0) {
      r.end = HitLoopEnd::Duration;
      break;
    }
    auto ev = session.continueToBreakpoint(wait);
    if (!ev) {
      if (!stopped()) r.failed = ev.error();
      break;
    }
    if (ev->timedOut) {
      r.end = HitLoopEnd::Duration;
      break;
    }
    bool done = false;
    for (const auto& raw : ev->hits) {  // none: Delve stopped for itself; continue again
      if (std::find(ids.begin(), ids.end(), raw.breakpointId) == ids.end()) continue;
      const delve::BreakpointHit h = complete ? complete(raw) : raw;
      if (r.hits == 0) r.failed = captureError(h);
      if (r.failed) break;
      ++r.hits;
      if (!onHit(h)) {
        r.end = HitLoopEnd::Stopped;
        done = true;
        break;
      }
      if (maxHits > 0 && r.hits >= maxHits) {
        r.end = HitLoopEnd::Count;
        done = true;
        break;
      }
    }
    if (done || r.failed) break;
  }
  r.activeS = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

bool sameLimits(const ReadLimits& a, const ReadLimits& b) {
  return a.maxString == b.maxString && a.maxElements == b.maxElements && a.maxDepth == b.maxDepth;
}

Error sessionError(pid_t pid, Error e) {
  if (e.kind != ErrorKind::TargetGone || e.message.find("replaced its program") != std::string::npos) return e;
  return {e.kind, "PID " + std::to_string(pid) + " exited during the session (" + e.message + ")",
          "everything recorded before it exited is printed above"};
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace goscope::session
