// PerfUprobeLink: the fallback for kernels without uprobe_multi links. One
// perf-event uprobe (perf_event_open with the "uprobe" PMU: config1 = path,
// config2 = file offset) per address, with a BPF perf link carrying the
// cookie. RAII: destruction closes the link and the event, which removes the
// probe. Much slower to attach and detach than uprobe_multi (the kernel waits
// for an RCU grace period per probe), so only for the fallback.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope::bpf {

class PerfUprobeLink {
 public:
  PerfUprobeLink() = default;
  PerfUprobeLink(PerfUprobeLink&&) noexcept = default;
  PerfUprobeLink& operator=(PerfUprobeLink&&) noexcept = default;

  // pmuType: /sys/bus/event_source/devices/uprobe/type. pid 0 = every
  // process that maps the file (perf: pid -1 on cpu 0, which for uprobes
  // still fires on every CPU). The program must be a kprobe-type program
  // loaded without expected_attach_type.
  static Result<PerfUprobeLink> attach(int progFd, int pmuType, const std::string& path, uint64_t fileOffset,
                                       pid_t pid, uint64_t cookie, int* errnoOut = nullptr);

  bool attached() const { return link_.valid(); }
  void detach() {
    link_.reset();
    event_.reset();
  }

 private:
  UniqueFd event_;
  UniqueFd link_;
};

}  // namespace goscope::bpf
