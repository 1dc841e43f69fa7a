// api::startEventSession from a request alone: the target opened and the
// plan made here, the session started by the executor layer.
#include "api/goscope.hpp"

namespace goscope::api {

Result<std::unique_ptr<EventSession>> startEventSession(const ProbeRequest& r, const Notice& notice) {
  auto target = openTarget(r);
  if (!target) return target.failure();
  auto made = plan(r, *target);
  if (!made) return made.failure();
  return session::startEventSession(r, *made, std::move(*target), notice);
}

}  // namespace goscope::api
