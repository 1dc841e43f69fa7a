// Which program a request is about, as -p PID, -c 'CMD ARGS' or -b BINARY
// name it (exactly one of the three).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace goscope {

struct TargetSpec {
  std::optional<pid_t> pid;
  std::optional<std::string> command;
  std::optional<std::string> binary;
  bool commandStdoutToStderr = false;  // -c with --json: keep stdout for JSON
};

}  // namespace goscope
