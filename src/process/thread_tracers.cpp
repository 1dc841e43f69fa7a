#include "process/thread_tracers.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace goscope {

namespace {

// The number after `key` in a /proc status file; -1 when it cannot be read
// (the thread or process is gone).
long statusNumber(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + key.size());
  return -1;
}

}  // namespace

Result<ThreadHold> threadHold(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const long leaderTracer = statusNumber(proc + "/task/" + std::to_string(pid) + "/status", "TracerPid:");
  const long before = statusNumber(proc + "/status", "Threads:");
  if (leaderTracer < 0 || before < 0) return fail(ErrorKind::NotFound, "no process " + std::to_string(pid));
  if (leaderTracer == 0) return fail(ErrorKind::Internal, "PID " + std::to_string(pid) + " is traced by no one");
  ThreadHold hold;
  long listed = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(proc + "/task", ec)) {
    const long tracer = statusNumber(task.path().string() + "/status", "TracerPid:");
    if (tracer < 0) {  // it ended while listed: only an untraced thread can
      hold.moving = true;
      continue;
    }
    ++listed;
    if (tracer != leaderTracer) hold.untraced.push_back(static_cast<pid_t>(std::atol(task.path().filename().c_str())));
  }
  if (ec) return fail(ErrorKind::NotFound, "no process " + std::to_string(pid) + " (" + ec.message() + ")");
  const long after = statusNumber(proc + "/status", "Threads:");
  if (after < 0) return fail(ErrorKind::NotFound, "no process " + std::to_string(pid));
  if (after != before || listed != after) hold.moving = true;
  return hold;
}

}  // namespace goscope
