#include "session/event_session.hpp"

#include <algorithm>
#include <atomic>
#include <optional>

#include "session/event_sessions.hpp"
#include "session/prepared_engine.hpp"

namespace goscope::session {

const char* describe(EventEnd e) {
  switch (e) {
    case EventEnd::Duration: return "duration reached";
    case EventEnd::Signal: return "interrupted";
    case EventEnd::TargetExited: return "the target exited";
    case EventEnd::TargetExeced: return "target replaced its program (exec); the probes were in the old one";
    case EventEnd::HitCount: return "hit count reached";
    case EventEnd::OutputClosed: return "output closed";
    case EventEnd::Failed: return "failed";
    case EventEnd::OverBudget: return "over the overhead budget";
  }
  return "";
}

namespace {

// A Delve session that may move to BPF while it runs: it owns the target
// (the BPF session needs it), runs Delve, and when Delve ends over the
// budget starts BPF on the same request — what is left of -n and -d — and
// goes on with the same sink, so the caller's hit numbers continue.
class MovingEventSession final : public EventSession {
 public:
  MovingEventSession(const ProbeRequest& r, TracedTarget target) : request_(r), target_(std::move(target)) {}

  Result<void> start() {
    auto d = startDelveEvents(request_, target_, true);
    if (!d) return d.failure();
    delve_ = std::move(*d);
    return {};
  }

  TracedTarget takeTarget() { return std::move(target_); }

  Backend path() const override { return bpf_ ? Backend::Bpf : Backend::Delve; }
  std::string announcement() const override { return delve_->announcement(); }
  std::string accessNotice() const override { return bpf_ ? bpf_->accessNotice() : ""; }
  void stop() override {
    stopAsked_ = true;
    if (bpf_) bpf_->stop();
    else delve_->stop();
  }

  EventTotals run(const std::function<bool(const Call&)>& sink) override {
    auto forward = [this](const BoundAction& a) { bound(a); };
    delve_->onBound(forward);
    EventTotals d = delve_->run(sink);
    if (d.end != EventEnd::OverBudget || stopAsked_) return d;
    ProbeRequest rest = request_;
    rest.strategy = StrategyChoice::Bpf;
    if (rest.maxHits > 0) rest.maxHits = std::max(1LL, rest.maxHits - d.calls);
    if (rest.durationS > 0) rest.durationS = std::max(0.05, rest.durationS - d.activeS);
    auto b = startBpfEvents(rest, std::move(target_));
    if (!b) {
      d.end = EventEnd::Failed;
      d.failed = Error{b.error().kind, "over the overhead budget, and the move to BPF failed: " + b.error().message,
                       b.error().hint};
      return d;
    }
    bpf_ = std::move(*b);
    bound({BoundAction::Kind::Moved, d.activeS, request_.locations.front(), 0, 0, 0, request_.maxOverheadPct,
           bpf_->announcement().substr(bpf_->announcement().find(' ') + 1)});
    bpf_->onBound(forward);
    bpf_->onIdle([this] { idle(); });
    EventTotals t = bpf_->run(sink);
    t.calls += d.calls;
    t.activeS += d.activeS;
    t.costs = d.costs;
    t.cost.elapsedS += d.cost.elapsedS;
    t.cost.stoppedMs = d.cost.stoppedMs;
    t.cost.stoppedMeasured = d.cost.stoppedMeasured;
    t.cost.stoppedAtHitsMs = d.cost.stoppedAtHitsMs;
    t.cost.peakRate = std::max(t.cost.peakRate, d.cost.peakRate);
    t.cost.figures = d.cost.figures + "; " + t.cost.figures;
    t.cost.actions.insert(t.cost.actions.begin(), d.cost.actions.begin(), d.cost.actions.end());
    t.cost.enforced = true;
    return t;
  }

 private:
  ProbeRequest request_;
  TracedTarget target_;
  std::unique_ptr<EventSession> delve_, bpf_;
  std::atomic<bool> stopAsked_{false};
};

}  // namespace

Result<std::unique_ptr<EventSession>> startEventSession(const ProbeRequest& r, const Plan& plan, TracedTarget target,
                                                        const Notice& notice) {
  using Started = std::unique_ptr<EventSession>;
  std::optional<TracedTarget> owned;
  owned.emplace(std::move(target));
  return withFallback<Started>(r, plan, notice, [&](Backend path) -> Result<Started> {
    if (path == Backend::Delve) {
      // A BPF plan's prepared engine (the BPF path failed before taking it):
      // released before Delve attaches.
      if (owned->prepared()) owned->prepared()->engine.reset();
      // Over its budget a Delve session moves where the plan says (BPF, for
      // a request BPF serves as well), or stays.
      if (plan.overBudget != Backend::Bpf) return startDelveEvents(r, *owned, false);
      auto s = std::make_unique<MovingEventSession>(r, std::move(*owned));
      if (auto ok = s->start(); !ok) {
        owned.emplace(s->takeTarget());  // dlv failed: the fallback, if any, needs the target back
        return ok.failure();
      }
      return Started(std::move(s));
    }
    std::shared_ptr<PreparedPath> prepared = std::move(owned->prepared());
    return startBpfEvents(r, std::move(*owned), plan.ratePerS, std::move(prepared));
  });
}

}  // namespace goscope::session
