#include "target/run_state.hpp"

#include <fstream>

namespace goscope {

RunState runStateOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return RunState::Gone;
  auto close = stat.rfind(')');  // the name in parentheses may hold anything
  if (close == std::string::npos || close + 2 >= stat.size()) return RunState::Gone;
  switch (stat[close + 2]) {
    case 'T': return RunState::Stopped;
    case 't': return RunState::Traced;
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
