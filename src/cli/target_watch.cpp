#include "cli/target_watch.hpp"

#include "process/process.hpp"

namespace goscope::cli {

namespace {
pid_t watched = 0;
}

pid_t watchTarget(pid_t pid) {
  // Only a process that was there at the start can exit under goscope; a
  // PID that never existed stays "no process with PID N" (exit 3).
  watched = processIsAlive(pid) ? pid : 0;
  return pid;
}

Error explainFailure(const Error& e) {
  if (watched <= 0 || processIsAlive(watched)) return e;
  switch (e.kind) {
    case ErrorKind::TargetGone:
    case ErrorKind::Usage:
    case ErrorKind::Interrupted:
      return e;
    default:
      break;
  }
  return {ErrorKind::TargetGone,
          "PID " + std::to_string(watched) + " exited while goscope was working on it (" + e.message + ")",
          "nothing is left attached; run goscope again on a live process"};
}

}  // namespace goscope::cli
