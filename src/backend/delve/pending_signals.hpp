// Whether a SIGTRAP waits to be delivered to a (stopped) target.
//
// Delve's halt is kill(pid, SIGTRAP). Sent to a target that is already
// stopped, the signal stays pending (ShdPnd bit 5 in /proc/PID/status);
// Delve would swallow it on the next continue, but Detach hands it to the
// target, which dies of "SIGTRAP: trace trap" (measured, Delve 1.20.2). The
// session checks this before every detach: the check is exact while the
// target is stopped, and catches the halt that crossed a breakpoint stop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "util/result.hpp"

namespace goscope::delve {

// The hex mask after `key:` ("ShdPnd", "SigPnd") in a /proc status text.
std::optional<uint64_t> parseSignalMask(std::string_view statusText, std::string_view key);

// True when SIGTRAP is pending for the process (ShdPnd) or any of its threads
// (SigPnd of /proc/PID/task/*/status). TargetGone when the process is gone.
Result<bool> sigtrapPending(pid_t pid);

}  // namespace goscope::delve
