#include "api/event_session.hpp"

#include "api/event_sessions.hpp"
#include "api/goscope.hpp"

namespace goscope::api {

const char* describe(EventEnd e) {
  switch (e) {
    case EventEnd::Duration: return "duration reached";
    case EventEnd::Signal: return "interrupted";
    case EventEnd::TargetExited: return "the target exited";
    case EventEnd::TargetExeced: return "target replaced its program (exec); the probes were in the old one";
    case EventEnd::HitCount: return "hit count reached";
    case EventEnd::OutputClosed: return "output closed";
    case EventEnd::Failed: return "failed";
  }
  return "";
}

Result<std::unique_ptr<EventSession>> startEventSession(const ProbeRequest& r, const Plan& plan, TracedTarget target,
                                                        const Notice& notice) {
  using Started = std::unique_ptr<EventSession>;
  return withFallback<Started>(r, plan, notice, [&](Backend path) -> Result<Started> {
    if (path == Backend::Delve) return startDelveEvents(r, target);
    return startBpfEvents(r, std::move(target));
  });
}

Result<std::unique_ptr<EventSession>> startEventSession(const ProbeRequest& r, const Notice& notice) {
  auto target = openTarget(r);
  if (!target) return target.failure();
  auto plan = api::plan(r, target->binary(), r.target.pid);
  if (!plan) return plan.failure();
  return startEventSession(r, *plan, std::move(*target), notice);
}

}  // namespace goscope::api
