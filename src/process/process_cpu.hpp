// The CPU time a process has used, all its threads together: user and
// system time from /proc/PID/stat. A uprobe's trap and its BPF program run
// in the probed thread's context and are charged to it as system time
// (docs/overhead.md, "An upper bound from the target's own clock"), so what
// the probes took from a process can never exceed what this clock advanced.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace goscope {

// utime + stime of the whole thread group, in ns (clock-tick resolution:
// 10 ms at USER_HZ 100). nullopt when the process is gone or unreadable.
std::optional<uint64_t> processCpuNs(pid_t pid);

}  // namespace goscope
