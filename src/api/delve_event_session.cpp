// The Delve event session: break (one breakpoint at FUNC: full Go types,
// expressions, locals, a condition) and trace's Delve plan (one breakpoint
// per matched function, at most kDelveMaxBreakpoints, arguments at the
// entry: chosen when BPF cannot read what was asked, e.g. float arguments in
// XMM registers). Every hit stops the whole process for a round trip to dlv.
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "api/delve_capture.hpp"
#include "api/event_sessions.hpp"
#include "probe/pattern.hpp"
#include "target/disasm.hpp"
#include "util/stop_signals.hpp"

namespace goscope::api {

namespace {

constexpr int kTraceStackFrames = 16;

Result<std::vector<std::string>> matchingFunctions(const GoBinary& bin, const ProbeRequest& r) {
  auto patterns = patternsOf(r);
  if (!patterns) return patterns.failure();
  std::vector<std::string> names;
  for (const auto& fn : bin.pclntab().functions())
    for (const auto& p : *patterns)
      if (p.matches(fn.name)) {
        names.push_back(fn.name);
        break;
      }
  if (names.empty()) return fail(ErrorKind::NoMatch, "trace: no function matches " + r.locations.front());
  if (names.size() > kDelveMaxBreakpoints)
    return fail(ErrorKind::Usage,
                "trace: " + std::to_string(names.size()) + " functions match; the Delve path sets at most " +
                    std::to_string(kDelveMaxBreakpoints) + " breakpoints",
                "narrow the pattern, or let BPF trace them: --strategy bpf");
  return names;
}

// A breakpoint at a raw address (`*0x4835c1`) writes an int3 there: inside
// an instruction it corrupts the target (its displacement or immediate
// changes for the whole session, and after it). The same disassembler that
// places the BPF probes checks the address first.
Result<void> checkRawAddress(TracedTarget& target, const std::string& location) {
  char* end = nullptr;
  const uint64_t addr = std::strtoull(location.c_str() + 1, &end, 0);
  if (end == location.c_str() + 1 || *end != '\0')
    return fail(ErrorKind::Usage, "break: " + location + " is not an address (*0x4835c0)");
  auto bias = target.loadBias();
  if (!bias) return bias.failure();
  const uint64_t link = addr - *bias;
  const GoBinary& bin = target.binary();
  const GoFunction* fn = bin.pclntab().functionAt(link);
  if (!fn)
    return fail(ErrorKind::Usage, "break: " + location + " is not in any function of " + target.describe(),
                "goscope list shows every function and its entry");
  auto code = bin.analyze(*fn);
  if (!code) return fail(ErrorKind::Usage, "break: " + location + ": " + fn->name + " cannot be disassembled: " + code.error().message);
  if (!isInstructionBoundary(*code, link))
    return fail(ErrorKind::Usage,
                "break: " + location + " is inside an instruction of " + fn->name +
                    ": a breakpoint there would corrupt the target",
                "give the address of an instruction's first byte (objdump -d), or the function's name");
  return {};
}

class DelveEventSession final : public EventSession {
 public:
  DelveEventSession(const ProbeRequest& r) : request_(r), pid_(*r.target.pid), t0_(std::chrono::steady_clock::now()) {}

  Result<void> start(TracedTarget& target) {
    const GoBinary& bin = target.binary();
    const bool isBreak = request_.action == Action::Break;
    for (const auto& l : request_.locations)
      if (l.starts_with("*"))
        if (auto ok = checkRawAddress(target, l); !ok) return ok;
    std::vector<std::string> locations = request_.locations;
    if (!isBreak) {
      auto names = matchingFunctions(bin, request_);
      if (!names) return names.failure();
      locations = std::move(*names);
    }
    parts_.args = request_.capture.args;
    parts_.exprs = request_.capture.exprs;
    parts_.locals = request_.capture.locals;
    parts_.stack = request_.capture.stack ? (isBreak ? request_.capture.stackFrames : kTraceStackFrames) : 0;
    auto session = attachDelve(pid_, request_.dlvArgs, &target);
    if (!session) return session.failure();
    session_ = std::move(*session);
    if (auto e = syntaxError(*session_, parts_.exprs)) return fail(*e);
    for (const auto& loc : locations) {
      delve::BreakpointSpec spec = captureSpec(loc, parts_);
      spec.cond = request_.capture.cond.value_or("");
      auto bp = session_->createBreakpoint(spec);
      if (!bp) return bp.failure();
      ids_.push_back(bp->id);
      if (ids_.size() == 1) {
        firstFile_ = bp->file;
        firstLine_ = bp->line;
      }
    }
    return {};
  }

  Backend path() const override { return Backend::Delve; }

  std::string announcement() const override {
    char line[512];
    if (request_.action == Action::Break) {
      const std::string when = request_.capture.cond ? ", when " + *request_.capture.cond : "";
      std::snprintf(line, sizeof line, "goscope: breakpoint at %s (%s:%lld) in PID %d%s; Ctrl-C to stop",
                    request_.locations.front().c_str(), firstFile_.c_str(), static_cast<long long>(firstLine_), pid_,
                    when.c_str());
    } else {
      std::snprintf(line, sizeof line,
                    "goscope: %zu Delve breakpoint(s) in PID %d (arguments at entry; results are not captured on this "
                    "path); Ctrl-C to stop",
                    ids_.size(), pid_);
    }
    return line;
  }

  void stop() override {
    stopAsked_ = true;
    if (session_) session_->interrupt();  // async-signal-safe: it cuts a waiting continue short
  }

  EventTotals run(const std::function<bool(const Call&)>& sink) override {
    StopHookScope hook = interruptOnStop(*session_);
    HitLoopResult loop = runHitLoop(*session_, ids_, request_.maxHits, request_.durationS,
                                    [&](const delve::BreakpointHit& h) { return sink(callFromHit(h, parts_, pid_)); },
                                    &stopAsked_);
    // Clear before detaching when we can (stopped); detach clears them otherwise.
    if (session_->state() == delve::SessionState::Stopped)
      for (auto id : ids_) (void)session_->clearBreakpoint(id);
    auto detached = session_->detach();
    EventTotals t;
    t.path = Backend::Delve;
    t.calls = loop.hits;
    t.activeS = loop.activeS;
    t.pid = pid_;
    t.target = "PID " + std::to_string(pid_);
    t.end = loop.failed                          ? EventEnd::Failed
            : loop.end == HitLoopEnd::Count      ? EventEnd::HitCount
            : loop.end == HitLoopEnd::Duration   ? EventEnd::Duration
            : loop.end == HitLoopEnd::Stopped    ? EventEnd::OutputClosed
                                                 : EventEnd::Signal;
    if (loop.failed) t.failed = sessionError(pid_, *loop.failed);
    if (!detached) t.detachFailed = detached.error();
    auto times = session_->timings();
    t.costs = {pid_, times.stoppedMs, times.attachMs, times.detachMs, msSince(t0_)};
    return t;
  }

 private:
  ProbeRequest request_;
  pid_t pid_;
  std::chrono::steady_clock::time_point t0_;
  CaptureParts parts_;
  std::unique_ptr<delve::DelveSession> session_;
  std::vector<int64_t> ids_;
  std::string firstFile_;
  int64_t firstLine_ = 0;
  std::atomic<bool> stopAsked_{false};
};

}  // namespace

Result<std::unique_ptr<EventSession>> startDelveEvents(const ProbeRequest& r, TracedTarget& target) {
  if (!r.target.pid) return fail(ErrorKind::Usage, std::string(actionName(r.action)) + ": the Delve path needs -p PID");
  auto s = std::make_unique<DelveEventSession>(r);
  if (auto ok = s->start(target); !ok) return ok.failure();
  return std::unique_ptr<EventSession>(std::move(s));
}

}  // namespace goscope::api
