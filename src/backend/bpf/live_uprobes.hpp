// The uprobes BPF links hold in the kernel right now, as `bpftool link`
// shows them: uprobe_multi links (path, file offsets, pid filter; link info
// since Linux 6.8) and perf-event uprobe links (path, one offset). A uprobe
// shows in the process's code as an int3 like a debugger's leftover; whoever
// repairs code must not take these away from a running session.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope::bpf {

struct LiveUprobeLink {
  uint32_t id = 0;
  std::string kind;               // "uprobe_multi" or "perf_event"
  std::string path;               // the probed file
  uint32_t pid = 0;               // uprobe_multi's pid filter; 0: every process
  std::vector<uint64_t> offsets;  // file offsets
};

// Every uprobe link in the system. Permission when BPF is not allowed
// (needs CAP_SYS_ADMIN to walk link ids).
Result<std::vector<LiveUprobeLink>> liveUprobeLinks();

}  // namespace goscope::bpf
