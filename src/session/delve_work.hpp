// The one-off and low-frequency work of the Delve path, and the zero-pause
// direct read beside it: `goscope read`, `goscope set` and `goscope sample`
// are these plus printing. Every value comes in goscope's value model.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "session/call.hpp"
#include "session/fallback.hpp"
#include "probe/probe_request.hpp"
#include "process/traced_target.hpp"
#include "strategy/strategy.hpp"
#include "util/result.hpp"
#include "value/value.hpp"

namespace goscope::session {

// What a Delve session cost the target: how long it was stopped, and the
// session's own times.
struct DelveCosts {
  pid_t pid = 0;
  double stoppedMs = 0, attachMs = 0, detachMs = 0, totalMs = 0;
  // The target was stopped (state T: kill -STOP) before the attach and is
  // stopped again after the detach: it did not run (docs/kernel.md).
  bool leftStopped = false;
};

struct ReadResult {
  Backend path = Backend::DirectRead;
  std::vector<Value> values;     // one per request.capture.exprs, in order; fewer when one failed
  std::optional<Error> failed;   // the expression that failed (named in the message)
  bool interrupted = false;      // a stop signal came between two expressions
  std::optional<Error> detachFailed;
  double directMs = 0;           // DirectRead: the read's own time (the process did not stop)
  bool targetStopped = false;    // DirectRead: the process was stopped (state T) and stays so
  DelveCosts costs;              // Delve: the target was stopped from attach to detach
};

// Reads request.capture.exprs on the planned path (a direct read from
// memory, or Delve: attach, evaluate each, detach), falling back as
// fallback.hpp decides. Errors: what kept anything from being read.
Result<ReadResult> read(const ProbeRequest& request, const Plan& plan, TracedTarget& target, const Notice& notice);

struct Change {
  std::string var;
  Value before, after;  // both read while the target was stopped around the write
};
struct WriteResult {
  std::vector<Change> changes;  // in request.writes order; fewer when one failed
  std::optional<Error> failed;
  std::optional<Error> detachFailed;
  DelveCosts costs;
};
// Writes request.writes through Delve. Errors: what kept Delve from starting.
// `target`: the process as the command opened it (not read again), if it did.
Result<WriteResult> write(const ProbeRequest& request, const TracedTarget* target = nullptr);
// The same under the plan api::plan() made for `request`: writes are Delve's
// alone, so any other plan is refused (Internal: the planner never makes one).
Result<WriteResult> write(const ProbeRequest& request, const Plan& plan, const TracedTarget* target);

// One sample: FUNC's next call (`call`), or a miss when it was not called in time.
struct Sample {
  int index = 0;
  std::optional<Call> call;
  double pauseMs = 0;  // the target stopped for this sample
  double elapsedS = 0;
};
struct SampleTotals {
  int taken = 0, misses = 0;
  double pauseSumMs = 0, pauseMaxMs = 0;
  std::optional<Error> failed;
  // `failed` is the target's exit (not an exec): how the session ended, which
  // callers may take as its normal end (goscope sample without --strict).
  bool targetExited = false;
  std::optional<Error> detachFailed;
  DelveCosts costs;
};
// Once every request.intervalS, with the target running in between: halt,
// set a breakpoint at request.locations[0] that captures what was asked,
// continue until it hits (or `timeoutS`: a miss), clear, continue. Until
// request.durationS (0: a stop signal, or `*stop` when given) or `sink`
// returns false. Errors: what kept sampling from starting (the location, an
// expression's syntax, Delve); `started` is called once sampling begins.
Result<SampleTotals> sample(const ProbeRequest& request, double timeoutS,
                            const std::function<void(const std::string& announcement)>& started,
                            const std::function<bool(const Sample&)>& sink, const std::atomic<bool>* stop = nullptr,
                            const TracedTarget* target = nullptr);

// The error that ended a session, as the user should see it: a target that
// exited names its PID and points at what was printed before.
Error sessionError(pid_t pid, Error e);

}  // namespace goscope::session
