#include "backend/bpf/uprobe_multi_link.hpp"

#include "backend/bpf/link_holder.hpp"
#include "util/fd_passing.hpp"

#include <linux/bpf.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

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

namespace {
// Without a link holder (link_holder.hpp): creates the link in a short-lived child and receives its fd. Why: when
// goscope is SIGKILLed during the BPF_LINK_CREATE, the kernel's install of a
// breakpoint fails with EINTR and its error path unregisters the uprobes
// already placed in the same task, with the fatal signal pending, which fails
// too and leaks them: their int3 stays in the target for good (dmesg:
// "failed to unregister, leaking uprobe"; 438 of 1,125 in
// tests/runtime/test_kill_safety.cpp). The child is out of the terminal's
// process group and deaf to the stop signals, so a signal meant for goscope
// does not reach it; if goscope dies meanwhile, the child's exit drops the
// link's last reference in a task with no signal pending, which detaches
// cleanly. Async-signal-safe in the child (fork of a possibly threaded
// process): rawUprobeMultiCreate and system calls only.
int createOffProcess(int progFd, const char* path, const uint64_t* offsets, const uint64_t* cookies, uint32_t cnt,
                     int pid) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return rawUprobeMultiCreate(progFd, path, offsets, cookies, cnt, 0, pid);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return rawUprobeMultiCreate(progFd, path, offsets, cookies, cnt, 0, pid);
  }
  if (child == 0) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::sigaction(sig, &ign, nullptr);
    ::setpgid(0, 0);
    ::close(sv[0]);
    int fd = rawUprobeMultiCreate(progFd, path, offsets, cookies, cnt, 0, pid);
    int result = fd < 0 ? fd : 0;
    sendWithFd(sv[1], &result, sizeof result, fd);
    ::_exit(0);  // closes our copy of the link fd: goscope holds its own now
  }
  ::close(sv[1]);
  int result = -EIO, fd = -1;
  iovec iov{&result, sizeof result};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  ssize_t n;
  while ((n = ::recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof result)) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) ::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  } else {
    result = -EIO;  // the child died without an answer
  }
  ::close(sv[0]);
  int status;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (result < 0) {
    if (fd >= 0) ::close(fd);
    return result;
  }
  return fd >= 0 ? fd : -EIO;
}
}  // namespace

Result<UprobeMultiLink> UprobeMultiLink::attach(int progFd, const std::string& path, pid_t pid,
                                                std::span<const uint64_t> offsets,
                                                std::span<const uint64_t> cookies, int* errnoOut,
                                                std::shared_ptr<LinkHolder> holder) {
  if (errnoOut) *errnoOut = 0;
  if (offsets.empty() || offsets.size() != cookies.size())
    return fail(ErrorKind::Internal, "uprobe_multi attach: " + std::to_string(offsets.size()) + " offsets but " +
                                         std::to_string(cookies.size()) + " cookies");
  int fd = holder ? holder->create(progFd, path, pid, offsets, cookies)
                  : createOffProcess(progFd, path.c_str(), offsets.data(), cookies.data(),
                                     static_cast<uint32_t>(offsets.size()), pid);
  if (fd < 0) {
    if (errnoOut) *errnoOut = -fd;
    ErrorKind kind = ErrorKind::External;
    if (-fd == ESRCH) kind = ErrorKind::TargetGone;
    else if (-fd == ENOENT) kind = ErrorKind::NotFound;
    else if (-fd == EPERM || -fd == EACCES) kind = ErrorKind::Permission;
    return fail(kind, "uprobe_multi attach of " + std::to_string(offsets.size()) + " offset(s) in " + path +
                          (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                          " failed: " +
                          (holder && -fd == EPIPE ? "the link holder (pid " + std::to_string(holder->pid()) + ") is gone"
                                                  : describeUprobeErrno(-fd)));
  }
  UprobeMultiLink l;
  if (holder) {
    l.holder_ = std::move(holder);
    l.heldId_ = static_cast<uint32_t>(fd);
  } else {
    l.fd_.reset(fd);
  }
  l.count_ = offsets.size();
  return l;
}

UprobeMultiLink& UprobeMultiLink::operator=(UprobeMultiLink&& o) noexcept {
  if (this != &o) {
    detach();
    fd_ = std::move(o.fd_);
    holder_ = std::move(o.holder_);
    heldId_ = std::exchange(o.heldId_, 0);
    count_ = std::exchange(o.count_, 0);
  }
  return *this;
}

void UprobeMultiLink::detach() {
  if (heldId_ && holder_) holder_->detach(heldId_);  // the holder unlinks its pin
  heldId_ = 0;
  holder_.reset();
  fd_.reset();
  count_ = 0;
}

}  // namespace goscope::bpf
