#include "backend/bpf/perf_uprobe_link.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "backend/bpf/uprobe_multi_link.hpp"

namespace goscope::bpf {

Result<PerfUprobeLink> PerfUprobeLink::attach(int progFd, int pmuType, const std::string& path, uint64_t fileOffset,
                                              pid_t pid, uint64_t cookie, int* errnoOut) {
  if (errnoOut) *errnoOut = 0;
  auto where = [&] {
    std::ostringstream s;
    s << path << "+0x" << std::hex << fileOffset;
    return s.str();
  };
  if (pmuType < 0)
    return fail(ErrorKind::External, "perf-event uprobe at " + where() + ": this kernel has no uprobe PMU",
                "a kernel with CONFIG_UPROBE_EVENTS is needed");
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = static_cast<uint32_t>(pmuType);
  attr.config = 0;  // bit 0 would make it a uretprobe: never on Go code
  attr.config1 = reinterpret_cast<uint64_t>(path.c_str());
  attr.config2 = fileOffset;
  attr.disabled = 1;
  int cpu = pid > 0 ? -1 : 0;
  int perfPid = pid > 0 ? pid : -1;
  long pfd = ::syscall(SYS_perf_event_open, &attr, perfPid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (pfd < 0) {
    int err = errno;
    if (errnoOut) *errnoOut = err;
    return fail(err == ESRCH ? ErrorKind::TargetGone : err == EACCES || err == EPERM ? ErrorKind::Permission
                                                                                      : ErrorKind::External,
                "perf-event uprobe at " + where() + " failed: " + describeUprobeErrno(err));
  }
  PerfUprobeLink l;
  l.event_.reset(static_cast<int>(pfd));
  LIBBPF_OPTS(bpf_link_create_opts, opts);
  opts.perf_event.bpf_cookie = cookie;
  int lfd = bpf_link_create(progFd, l.event_.get(), BPF_PERF_EVENT, &opts);
  if (lfd < 0) {
    int err = errno;
    if (errnoOut) *errnoOut = err;
    return fail(ErrorKind::External, "BPF perf link at " + where() + " failed: " + std::strerror(err),
                "kernels before 5.15 lack BPF cookies on perf links");
  }
  l.link_.reset(lfd);
  if (::ioctl(l.event_.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
    int err = errno;
    if (errnoOut) *errnoOut = err;
    return fail(ErrorKind::External, "enabling the perf-event uprobe at " + where() + " failed: " + std::strerror(err));
  }
  return l;
}

}  // namespace goscope::bpf
