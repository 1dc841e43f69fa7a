// One line of /proc/PID/stat, split into proc(5)'s numbered fields. The
// command name (field 2) sits in parentheses and may hold anything, spaces
// and parentheses included, so the fields are counted from after its last
// ')'. One parser for every reader: the run state (field 3), the CPU clock
// (utime 14, stime 15) and the program image's code start (startcode 26).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace goscope {

class ProcStat {
 public:
  explicit ProcStat(std::vector<std::string> fromState) : fields_(std::move(fromState)) {}
  // Field n in proc(5)'s numbering (3 = state); "" when the line is shorter.
  const std::string& field(int n) const;
  // Field n as a number; 0 when absent or not a number.
  uint64_t number(int n) const;
  // Field 3: R, S, D, T (stopped), t (traced), Z, X...; '?' when absent.
  char state() const;

 private:
  std::vector<std::string> fields_;  // fields 3 onwards
};

// nullopt when the process is gone or its line unreadable.
std::optional<ProcStat> readProcStat(pid_t pid);

}  // namespace goscope
