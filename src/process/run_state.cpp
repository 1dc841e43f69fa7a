#include "process/run_state.hpp"

#include "process/proc_stat.hpp"

namespace goscope {

RunState runStateOf(pid_t pid) {
  const auto stat = readProcStat(pid);
  if (!stat) return RunState::Gone;
  switch (stat->state()) {
    case 'T': return RunState::Stopped;
    case 't': return RunState::Traced;
    case '?':
    case 'Z':
    case 'X': return RunState::Gone;
    default: return RunState::Running;
  }
}

std::string stoppedTargetFact(pid_t pid) {
  return "PID " + std::to_string(pid) + " is stopped (state T: kill -STOP or Ctrl-Z)";
}

Error stoppedTargetRefusal(pid_t pid, const std::string& action) {
  const std::string p = std::to_string(pid);
  return {ErrorKind::BadTarget,
          stoppedTargetFact(pid) + "; " + action + " needs it running, and Delve would resume it",
          "resume it first: kill -CONT " + p +
              "; read, set and the BPF path (count, latency, trace) leave it stopped"};
}

}  // namespace goscope
