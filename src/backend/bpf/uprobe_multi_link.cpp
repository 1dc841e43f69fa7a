#include "backend/bpf/uprobe_multi_link.hpp"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace goscope::bpf {

namespace {
// union bpf_attr, link_create with the uprobe_multi member (kernel 6.6 UAPI),
// spelled out because the installed headers may predate it.
struct UprobeMultiAttr {
  uint32_t progFd;      // 0
  uint32_t targetFd;    // 4: must be 0
  uint32_t attachType;  // 8: BPF_TRACE_UPROBE_MULTI
  uint32_t flags;       // 12: link flags, must be 0
  uint64_t path;        // 16: const char *
  uint64_t offsets;     // 24: const u64 *
  uint64_t refCtrOffsets;  // 32
  uint64_t cookies;     // 40: const u64 *
  uint32_t cnt;         // 48
  uint32_t multiFlags;  // 52: BPF_F_UPROBE_MULTI_RETURN
  uint32_t pid;         // 56
  uint32_t pad;         // 60
};
static_assert(sizeof(UprobeMultiAttr) == 64);
static_assert(offsetof(UprobeMultiAttr, cnt) == 48 && offsetof(UprobeMultiAttr, pid) == 56);
}  // namespace

int rawUprobeMultiCreate(int progFd, const char* path, const uint64_t* offsets, const uint64_t* cookies,
                         uint32_t cnt, uint32_t multiFlags, int pid) {
  UprobeMultiAttr a;
  std::memset(&a, 0, sizeof a);
  a.progFd = static_cast<uint32_t>(progFd);
  a.attachType = kBpfTraceUprobeMulti;
  a.path = reinterpret_cast<uint64_t>(path);
  a.offsets = reinterpret_cast<uint64_t>(offsets);
  a.cookies = reinterpret_cast<uint64_t>(cookies);
  a.cnt = cnt;
  a.multiFlags = multiFlags;
  a.pid = static_cast<uint32_t>(pid);
  long fd = ::syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof a);
  if (fd < 0) return -errno;
  return static_cast<int>(fd);
}

std::string describeUprobeErrno(int err) {
  std::string s = std::strerror(err);
  switch (err) {
    case 524:  // ENOTSUPP (kernel-internal)
      return "an instruction uprobes cannot handle (int3, or not an instruction boundary the kernel accepts) "
             "(errno 524)";
    case ESRCH: return s + ": no such process";
    case ENOENT: return s + ": no such file";
    case EINVAL: return s + " (errno EINVAL: an offset outside the file's executable mapping, a bad pid, "
                            "or a kernel without uprobe_multi)";
    case EPERM:
    case EACCES: return s + " (needs CAP_BPF and CAP_PERFMON)";
    case EEXIST: return s + " (another tool has a conflicting probe at this address)";
    case ENOMEM:
    case E2BIG: return s + " (too many offsets in one link)";
    default: return s + " (errno " + std::to_string(err) + ")";
  }
}

Result<UprobeMultiLink> UprobeMultiLink::attach(int progFd, const std::string& path, pid_t pid,
                                                std::span<const uint64_t> offsets,
                                                std::span<const uint64_t> cookies, int* errnoOut) {
  if (errnoOut) *errnoOut = 0;
  if (offsets.empty() || offsets.size() != cookies.size())
    return fail(ErrorKind::Internal, "uprobe_multi attach: " + std::to_string(offsets.size()) + " offsets but " +
                                         std::to_string(cookies.size()) + " cookies");
  int fd = rawUprobeMultiCreate(progFd, path.c_str(), offsets.data(), cookies.data(),
                                static_cast<uint32_t>(offsets.size()), 0, pid);
  if (fd < 0) {
    if (errnoOut) *errnoOut = -fd;
    ErrorKind kind = ErrorKind::External;
    if (-fd == ESRCH) kind = ErrorKind::TargetGone;
    else if (-fd == ENOENT) kind = ErrorKind::NotFound;
    else if (-fd == EPERM || -fd == EACCES) kind = ErrorKind::Permission;
    return fail(kind, "uprobe_multi attach of " + std::to_string(offsets.size()) + " offset(s) in " + path +
                          (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                          " failed: " + describeUprobeErrno(-fd));
  }
  UprobeMultiLink l;
  l.fd_.reset(fd);
  l.count_ = offsets.size();
  return l;
}

}  // namespace goscope::bpf
