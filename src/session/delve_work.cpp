// read, write and sample on the Delve path (and read's direct path): each
// attaches through attachDelve, does its work while the target is stopped
// or in short pauses, and always detaches before returning.
#include "session/delve_work.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "session/delve_capture.hpp"
#include "session/delve_work.hpp"
#include "session/host_costs.hpp"
#include "session/write_check.hpp"
#include "backend/memory/direct_read.hpp"
#include "process/run_state.hpp"
#include "util/stop_signals.hpp"
#include "backend/delve/values_from_delve.hpp"

namespace goscope::session {

namespace {

using Clock = std::chrono::steady_clock;

DirectReadLimits directLimitsOf(const ReadLimits& l) {
  DirectReadLimits d;
  d.maxString = l.maxString;
  d.maxElems = l.maxElements;
  d.maxDepth = l.maxDepth;
  return d;
}

// What `set` may write into a variable, from its value as loaded.
WriteKind writeKindOf(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Int: return WriteKind::Signed;
    case Value::Kind::Uint: return WriteKind::Unsigned;
    case Value::Kind::Float: return WriteKind::Float;
    case Value::Kind::Bool: return WriteKind::Bool;
    case Value::Kind::Pointer:
    case Value::Kind::UnsafePointer: return WriteKind::Pointer;
    default: return WriteKind::Other;
  }
}

DelveCosts costsOf(const delve::DelveSession& s, Clock::time_point t0) {
  auto t = s.timings();
  return {s.targetPid(), t.stoppedMs, t.attachMs, t.detachMs, msSince(t0), s.leftStopped()};
}

Result<ReadResult> readDirectly(const ProbeRequest& r, TracedTarget& target) {
  const Process* proc = target.process();
  if (!proc) return fail(ErrorKind::Usage, "read: a direct read needs a running process (-p PID)");
  auto bias = target.loadBias();
  if (!bias) return bias.failure();
  const auto t0 = Clock::now();
  ReadResult out;
  out.path = Backend::DirectRead;
  for (const auto& e : r.capture.exprs)
    if (std::string why = directReadRefusal(target.binary(), e); !why.empty())
      return fail(ErrorKind::Usage, "read: cannot read " + e + " directly: " + why, "Delve can: --strategy delve");
  for (const auto& e : r.capture.exprs) {
    auto v = readGlobalDirect(target.binary(), *proc, *bias, e, directLimitsOf(r.readLimits));
    if (!v) return v.failure();
    out.values.push_back(std::move(*v));
  }
  out.directMs = msSince(t0);
  out.targetStopped = runStateOf(proc->pid()) == RunState::Stopped;
  return out;
}

Result<ReadResult> readWithDelve(const ProbeRequest& r, const TracedTarget& target) {
  const auto t0 = Clock::now();
  auto session = attachDelve(*r.target.pid, {r.dlvArgs, r.dlvPath}, &target);
  if (!session) return session.failure();
  ReadResult out;
  out.path = Backend::Delve;
  for (const auto& e : r.capture.exprs) {
    if (stopRequested()) {
      out.interrupted = true;
      break;
    }
    // One-off reads can afford more than Delve's per-hit default: by default
    // nested structs two levels down and longer strings (ReadLimits), the
    // same limits as the direct read's.
    auto v = (*session)->eval(e, loadConfigOf(r.readLimits));
    if (!v) {
      if (stopRequested()) {
        out.interrupted = true;  // Ctrl-C: not an error of the expression
      } else {
        out.failed = v.error();
        if (out.failed->kind != ErrorKind::TargetGone) out.failed->message = e + ": " + out.failed->message;
        out.failed = sessionError(*r.target.pid, *out.failed);
      }
      break;
    }
    out.values.push_back(valueFromDelve(*v));
    out.values.back().name = e;  // as typed, not Delve's last path step
  }
  if (auto d = (*session)->detach(); !d) out.detachFailed = d.error();
  out.costs = costsOf(**session, t0);
  return out;
}

// Sleeps until `until` while the target runs, waking to notice a stop
// signal; false when one came.
bool sleepUntil(Clock::time_point until, const std::atomic<bool>* stop) {
  auto stopped = [stop] { return stopRequested() || (stop && *stop); };
  while (Clock::now() < until) {
    if (stopped()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
  }
  return !stopped();
}

struct Taken {
  std::optional<delve::BreakpointHit> hit;  // nullopt: FUNC was not called in time
  double pauseMs = 0;
};

// One sample from a stopped or running target; leaves it running. The
// breakpoint exists only inside this function. Delve evaluates a
// breakpoint's expressions with a LoadConfig of its own (its per-hit
// defaults, whatever the breakpoint asks: docs/delve.md, "What a breakpoint
// loads"); `evalAtHit` has them evaluated here instead, at the hit, in the
// goroutine that hit it, with `load`.
Result<Taken> takeSample(delve::DelveSession& s, const delve::BreakpointSpec& spec, delve::Millis timeout,
                         const std::vector<std::string>& evalAtHit, const rpc::LoadConfig& load) {
  Taken out;
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
  std::optional<Error> evalFailed;  // said once the target runs again
  for (size_t i = 0; out.hit && i < evalAtHit.size() && !evalFailed; i++) {
    auto v = s.eval(evalAtHit[i], load, out.hit->goroutineId);
    if (!v && v.error().kind == ErrorKind::TargetGone) return v.failure();
    if (!v) {
      evalFailed = v.error();
      evalFailed->message = evalAtHit[i] + ": " + evalFailed->message;
      break;
    }
    v->name = evalAtHit[i];
    out.hit->captured.variables.push_back(std::move(*v));
  }
  if (auto c = s.clearBreakpoint(bp->id); !c) return c.failure();
  if (auto r = s.resume(); !r) return r.failure();
  out.pauseMs = s.timings().stoppedMs - stoppedBefore;
  if (evalFailed) return fail(*evalFailed);
  return out;
}

}  // namespace

Result<ReadResult> read(const ProbeRequest& r, const Plan& plan, TracedTarget& target, const Notice& notice) {
  if (!r.target.pid) return fail(ErrorKind::Usage, "read: name the process: -p PID");
  return withFallback<ReadResult>(r, plan, notice, [&](Backend path) -> Result<ReadResult> {
    if (path == Backend::DirectRead) return readDirectly(r, target);
    return readWithDelve(r, target);
  });
}

Result<WriteResult> write(const ProbeRequest& r, const Plan& plan, const TracedTarget* target) {
  if (plan.backend != Backend::Delve)
    return fail(ErrorKind::Internal, std::string("set: planned onto ") + backendName(plan.backend) +
                                         ", but writes are Delve's alone");
  return write(r, target);
}

Result<WriteResult> write(const ProbeRequest& r, const TracedTarget* target) {
  if (!r.target.pid) return fail(ErrorKind::Usage, "set: name the process: -p PID");
  const auto t0 = Clock::now();
  auto session = attachDelve(*r.target.pid, {r.dlvArgs, r.dlvPath}, target);
  if (!session) return session.failure();
  auto& s = **session;
  WriteResult out;
  auto failWith = [&](const std::string& var, const std::string& value, Error e, bool nothingWritten) {
    e.message = var + "=" + value + ": " + e.message + (nothingWritten ? "; nothing was written" : "");
    out.failed = sessionError(*r.target.pid, e);
  };
  // Every assignment is checked before the first is written: all or nothing.
  std::vector<Value> befores;
  for (const auto& [var, value] : r.writes) {
    auto loaded = s.eval(var);
    if (!loaded) {
      failWith(var, value, loaded.error(), true);
      break;
    }
    Value before = valueFromDelve(*loaded);
    auto name = checkWrite(writeKindOf(before), before.type, value);
    if (name && *name) {
      if (auto other = s.eval(**name); !other) name = other.failure();  // a variable that must exist
    }
    if (!name) {
      failWith(var, value, name.error(), true);
      break;
    }
    befores.push_back(std::move(before));
  }
  for (size_t i = 0; !out.failed && i < r.writes.size(); i++) {
    const auto& [var, value] = r.writes[i];
    auto written = s.set(var, value);
    auto after = written ? s.eval(var) : Result<rpc::Variable>(written.failure());
    if (!after) {
      failWith(var, value, after.error(), false);
      break;
    }
    out.changes.push_back({var, std::move(befores[i]), valueFromDelve(*after)});
  }
  if (auto d = s.detach(); !d) out.detachFailed = d.error();
  out.costs = costsOf(s, t0);
  return out;
}

Result<SampleTotals> sample(const ProbeRequest& r, double timeoutS, const std::function<void(const std::string&)>& started,
                            const std::function<bool(const Sample&)>& sink, const std::atomic<bool>* stop,
                            const TracedTarget* target) {
  if (!r.target.pid) return fail(ErrorKind::Usage, "sample: name the process: -p PID");
  const pid_t pid = *r.target.pid;
  const std::string at = r.locations.empty() ? std::string() : r.locations.front();
  const auto t0 = Clock::now();
  auto attached = attachDelve(pid, {r.dlvArgs, r.dlvPath}, target, "sample");
  if (!attached) return attached.failure();
  auto& s = **attached;
  StopHookScope hook = interruptOnStop(s);
  CaptureParts parts;
  parts.exprs = r.capture.exprs;
  parts.args = r.capture.args;
  parts.limits = r.hitLimits;
  if (auto e = syntaxError(s, parts.exprs)) return fail(*e);
  // A location that does not resolve is an error now, not a miss later.
  auto where = s.findLocation(at);
  if (!where) return where.failure();
  if (where->size() != 1)
    return fail(where->empty() ? ErrorKind::NoMatch : ErrorKind::Usage,
                "--at " + at + " matches " + std::to_string(where->size()) + " places", "name one function or file:line");
  delve::BreakpointSpec spec = captureSpec(at, parts);
  // Limits other than Delve's own for a breakpoint's expressions: they are
  // evaluated at each hit instead (takeSample).
  std::vector<std::string> evalAtHit;
  if (!sameLimits(r.hitLimits, kHitReadLimits)) evalAtHit = std::exchange(spec.variables, {});
  char line[256];
  std::snprintf(line, sizeof line, "goscope: sampling PID %d at %s every %g s; Ctrl-C to stop", pid, at.c_str(), r.intervalS);
  started(line);

  // The first sample starts at once: the attach left the target stopped.
  const auto start = Clock::now();
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.intervalS));
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.durationS));
  const auto timeout = delve::Millis(std::max<long long>(1, std::llround(timeoutS * 1000)));
  SampleTotals totals;
  for (auto next = start; r.durationS <= 0 || next < end; next += interval) {
    if (!sleepUntil(next, stop)) break;
    auto taken = takeSample(s, spec, timeout, evalAtHit, spec.load);
    if (!taken) {
      if (!stopRequested()) totals.failed = sessionError(pid, taken.error());
      totals.targetExited = totals.failed && totals.failed->kind == ErrorKind::TargetGone &&
                            totals.failed->message.find("replaced its program") == std::string::npos;
      break;
    }
    Sample one;
    one.index = ++totals.taken;
    one.pauseMs = taken->pauseMs;
    one.elapsedS = std::round(msSince(start)) / 1000;
    if (taken->hit) {
      if (auto e = captureError(*taken->hit)) {
        totals.failed = sessionError(pid, *e);
        break;
      }
      one.call = callFromHit(*taken->hit, parts, pid);
    }
    totals.misses += !taken->hit;
    totals.pauseSumMs += taken->pauseMs;
    totals.pauseMaxMs = std::max(totals.pauseMaxMs, taken->pauseMs);
    if (!sink(one)) break;  // nobody reads any more (`| head`)
    if (Clock::now() > next + interval) next = Clock::now() - interval;  // fell behind: no burst
  }
  if (auto d = s.detach(); !d) totals.detachFailed = d.error();
  totals.costs = costsOf(s, t0);
  return totals;
}

}  // namespace goscope::session
