// LinkHolder: the one process of a goscope session that owns its
// uprobe_multi links, so that no SIGKILL of goscope can make the kernel leak
// a uprobe (int3 left in the target for good, dmesg "failed to unregister,
// leaking uprobe": docs/kernel.md, "Who drops a uprobe_multi link's last
// reference").
//
// The holder is a small process started once per Engine with posix_spawn
// (an exec of the goscope CLI: `goscope __link-holder FD ...`, not a fork of
// a possibly big goscope). No process of goscope's ever drops a link's last
// reference in a close(2), nor sends a link's fd over a socket: the last
// reference goes in a process's exit (or from a kworker, for a pin), the
// one release a SIGKILL cannot interrupt. The holder lives in a mount
// namespace of its own with a private bpffs when it may (CAP_SYS_ADMIN):
//   - each link is created by a short-lived fork of the holder (a small
//     process) in a session and process group of its own, so a SIGKILL of
//     the holder, of its group or of goscope's during BPF_LINK_CREATE does
//     not land in the creating task (the only task that leaks when killed
//     there: docs/kernel.md, "Which task leaks a uprobe"); the fork pins the
//     link and exits. A creating fork killed by a SIGKILL aimed at it is
//     followed by a sweep of its offsets;
//   - detach: a fork of the holder in a session of its own takes an fd from
//     the pin, unlinks the pin and exits. The pin's own reference goes
//     after an RCU grace period, so the last put may be the pin's, freeing
//     the link later from a kworker: for a link with a pid filter the
//     holder answers once the target's bytes are the file's again (up to
//     5 s), so "detached" means the probes are off;
//   - when the holder dies, however it dies, its mount namespace dies with
//     it (once its forks have exited) and the bpffs superblock with it:
//     every pin left is released through bpf_link_put, which frees the link
//     from a workqueue, where no signal is pending (docs/kernel.md: 20 ms to
//     2 s later on a loaded machine, against 20-70 ms for a direct release).
// Without CAP_SYS_ADMIN (a setcap copy: docs/security.md) there is no bpffs:
// the fork that created a link keeps its only fd (a keeper, in its own
// session) and exits when the holder closes its end of their socket
// (detach) or dies; the keeper's exit releases the link. A keeper killed on
// its own ends the holder, so that goscope reports the lost probes.
// goscope keeps no link fd (its close could be the last reference).
//
// Requests go over a SOCK_SEQPACKET socketpair. At EOF (goscope gone,
// killed or not) the holder releases what is left the quick way and exits.
// If the holder dies first, the client notices (POLLHUP) and reports it:
// every probe is gone then, or within moments.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope::bpf {

// The hidden first argument the CLI dispatches on (src/main.cpp).
inline constexpr const char* kLinkHolderCommand = "__link-holder";

// The holder's main: serves requests on `sock` until EOF. Never returns to
// goscope's normal path; the value is the process's exit code.
int runLinkHolder(int sock);

// Which executable answers to `__link-holder`: the CLI registers itself
// (/proc/self/exe); other programs (tests, the API's users) use the goscope
// CLI built next to them, or GOSCOPE_LINK_HOLDER=PATH. GOSCOPE_LINK_HOLDER=off
// disables the holder (links are then created and closed in forks of the
// process, the older way).
void setLinkHolderProgram(std::string path);

class LinkHolder {
 public:
  // Starts the holder. Fails (with the reason) when it cannot run here: no
  // executable found, or no mount namespace / bpffs allowed.
  static Result<std::shared_ptr<LinkHolder>> spawn();
  ~LinkHolder();
  LinkHolder(const LinkHolder&) = delete;
  LinkHolder& operator=(const LinkHolder&) = delete;

  // Creates a uprobe_multi link in the holder. keep = false: a trial (the
  // link is released at once; for finding refused offsets). Returns the
  // link's id in the holder (> 0), or -errno (EPIPE: the holder is gone).
  int create(int progFd, const std::string& path, pid_t pid, std::span<const uint64_t> offsets,
             std::span<const uint64_t> cookies, bool keep = true);
  // Releases a link; returns 0 or -errno. The holder answers once the
  // probes are off, which can take seconds (another tool's uprobe at the
  // same address, a late free from a kworker): when the user says they will
  // not wait (a second stop signal; a SIGTERM after half a second), goscope
  // stops waiting and sends nothing more (-EINTR, and -EPIPE for every later
  // request). The holder still finishes, then releases every link left at
  // the EOF that follows, so the probes come off all the same.
  int detach(uint32_t id);

  pid_t pid() const { return pid_; }
  // True once the holder has died: every link it held is gone.
  bool lost() const { return lost_.load(); }
  // Called once (from a watcher thread) when the holder dies while this
  // object lives. Set before the first create.
  void onLost(std::function<void()> f) { onLost_ = std::move(f); }

 private:
  LinkHolder() = default;
  int roundTrip(const void* req, size_t len, int fd1, int fd2, int* extra = nullptr, int fd3 = -1,
                bool userMayAbandon = false);
  void watch();

  UniqueFd sock_;
  UniqueFd stopPipeRead_, stopPipeWrite_;
  pid_t pid_ = -1;
  std::mutex mu_;
  std::atomic<bool> lost_{false};
  std::atomic<bool> closing_{false};
  bool abandoned_ = false;  // a reply the user would not wait for: the socket is out of step (under mu_)
  std::function<void()> onLost_;
  std::thread watcher_;
};

}  // namespace goscope::bpf
