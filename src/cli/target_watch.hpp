// The -p process a command works on, remembered so that a failure while the
// session is set up can be told for what it usually is: the target exited
// under goscope. Killed during attach, it would surface as whatever step
// failed first ("cannot open /proc/N/exe", "auxv", exit 3 or 7); errors.md
// promises exit 8 for a target that exits.
#pragma once

#include <sys/types.h>

#include "util/result.hpp"

namespace goscope::cli {

// The -p PID just parsed (0: none).
pid_t watchTarget(pid_t pid);

// `e` as the user should read it: when the watched process is gone and `e`
// is not already about that (or the user's own doing: usage, Ctrl-C), a
// TargetGone error that says so and keeps `e`'s text.
Error explainFailure(const Error& e);

}  // namespace goscope::cli
