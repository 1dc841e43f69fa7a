#include "backend/bpf/link_holder.hpp"

#include <fcntl.h>
#include <linux/bpf.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <cstdio>
#include <ctime>
#include <sys/sysmacros.h>
#include <vector>

#include "backend/bpf/uprobe_multi_link.hpp"
#include "util/signal_safe.hpp"
#include "util/stop_signals.hpp"

extern char** environ;

namespace goscope::bpf {

namespace {

enum Op : uint32_t { kCreate = 1, kDetach = 2 };

struct Request {
  uint32_t op = 0;
  uint32_t id = 0;      // kDetach
  int32_t pid = 0;      // kCreate: the pid filter
  uint32_t cnt = 0;     // kCreate: offsets (and cookies) in the memfd, then the path
  uint32_t keep = 1;    // kCreate: 0 = a trial, released at once
  uint32_t pad = 0;
};

struct Reply {
  int32_t result = 0;  // kCreate: id > 0 or -errno; kDetach: 0 or -errno
  int32_t stage = 0;   // the first message (ready): which setup step failed; kDetach: ms waited for the kernel
};

constexpr int kHolderFd = 3;  // the socket's number in the holder
constexpr int32_t kHoldsFds = 5;  // the ready message's stage: no bpffs, the holder keeps fds
constexpr const char* kSelfFd = "/proc/self/fd/";

std::mutex gProgramMutex;
std::string gProgram;  // set by the CLI: /proc/self/exe

constexpr int kMaxFds = 3;  // a create: the program, the memfd of offsets, the file probed

// sendmsg with up to three fds (the first negative one ends them); retries EINTR.
ssize_t sendFds(int sock, const void* data, size_t len, int fd1, int fd2, int fd3 = -1) {
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  int fds[kMaxFds] = {fd1, fd2, fd3};
  int nfds = fd1 < 0 ? 0 : fd2 < 0 ? 1 : fd3 < 0 ? 2 : 3;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
  if (nfds) {
    msg.msg_control = cbuf;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  ssize_t n;
  while ((n = ::sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n;
}

// recvmsg of one record and the fds that came with it (up to three).
ssize_t recvFds(int sock, void* data, size_t len, int fds[kMaxFds]) {
  for (int i = 0; i < kMaxFds; i++) fds[i] = -1;
  iovec iov{data, len};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(kMaxFds * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  ssize_t n;
  while ((n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return n;
  int k = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (k < kMaxFds) fds[k++] = fd;
      else ::close(fd);
    }
  }
  return n;
}

int pinObject(int fd, const char* path) {
  union bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.pathname = reinterpret_cast<uint64_t>(path);
  a.bpf_fd = static_cast<uint32_t>(fd);
  return ::syscall(SYS_bpf, BPF_OBJ_PIN, &a, sizeof a) == 0 ? 0 : -errno;
}

// ---- the holder ---------------------------------------------------------------

struct Held {  // what a held link is on
  std::string path;
  pid_t pid = 0;
  std::vector<uint64_t> offsets;
  // Without a bpffs: the process that keeps the link's only fd (the fork
  // that created it) and the holder's end of its socket; closing that end
  // tells it to exit. With a bpffs the link is pinned: -1 both.
  pid_t keeper = -1;
  int keeperSock = -1;
  // The file probed, when goscope sent it (path is then /proc/self/fd/N of
  // this fd): kept open while the link is held, for probedPages.
  std::shared_ptr<UniqueFd> file;
  dev_t dev = 0;
  ino_t ino = 0;
};

// In a fork of the holder: closes every fd but `a`, `b` and `c` (-1: none),
// so that the fork holds nothing of the holder's. The holder's sockets matter:
// a fork that kept a copy of goscope's socket, or of another keeper's,
// would keep its peer from seeing EOF when the holder dies.
void keepOnly(int a, int b, int c = -1) {
  int keep[3] = {a, b, c};
  std::sort(keep, keep + 3);
  unsigned next = 0;
  for (int fd : keep) {
    if (fd < 0) continue;
    if (static_cast<unsigned>(fd) > next) ::syscall(SYS_close_range, next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, next, ~0U, 0);
}

// Waits for a child of the holder, retrying EINTR; its status.
int reap(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// The pages of a link's target that hold its probes: the target's address
// of each, the file's bytes there, and which bytes in it are probed. Only
// for a link with a pid filter (empty otherwise, or when the target is gone).
struct ProbedPage {
  uint64_t vaddr;
  std::vector<uint8_t> file;
  std::vector<uint16_t> at;
};

std::vector<ProbedPage> probedPages(const Held& h) {
  std::vector<ProbedPage> out;
  struct stat st{};
  UniqueFd file(::open(h.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (h.pid <= 0 || !file.valid() || ::fstat(file.get(), &st) != 0) return out;
  struct Map {
    uint64_t start, end, pgoff;
  };
  std::vector<Map> maps;
  std::ifstream f("/proc/" + std::to_string(h.pid) + "/maps");
  std::string line;
  while (std::getline(f, line)) {
    unsigned long long start, end, pgoff, inode;
    unsigned maj, min;
    char perms[8];
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &pgoff, &maj, &min, &inode) != 7)
      continue;
    if (perms[2] == 'x' && inode == st.st_ino && makedev(maj, min) == st.st_dev) maps.push_back({start, end, pgoff});
  }
  std::map<uint64_t, std::pair<uint64_t, std::vector<uint16_t>>> pages;  // file page -> (vaddr page, offsets in it)
  for (uint64_t off : h.offsets)
    for (const Map& m : maps)
      if (off >= m.pgoff && off < m.pgoff + (m.end - m.start)) {
        auto& pg = pages[off & ~uint64_t{4095}];
        pg.first = (m.start + (off - m.pgoff)) & ~uint64_t{4095};
        pg.second.push_back(static_cast<uint16_t>(off & 4095));
      }
  for (auto& [fileOff, pg] : pages) {
    ProbedPage p{pg.first, std::vector<uint8_t>(4096), std::move(pg.second)};
    if (::pread(file.get(), p.file.data(), 4096, static_cast<off_t>(fileOff)) <= 0) continue;
    out.push_back(std::move(p));
  }
  return out;
}

// Waits until the target's bytes at every probe are the file's again, up to
// timeoutMs (another tool may probe the same addresses). Returns the wait in ms.
int waitRestored(pid_t pid, std::vector<ProbedPage> pages, int timeoutMs) {
  if (pages.empty()) return 0;
  UniqueFd mem(::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid()) return 0;
  timespec t0;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  auto elapsedMs = [&] {
    timespec t;
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<int>((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
  };
  std::vector<uint8_t> buf(4096);
  for (;;) {
    std::erase_if(pages, [&](const ProbedPage& p) {
      if (::pread(mem.get(), buf.data(), 4096, static_cast<off_t>(p.vaddr)) != 4096) return true;  // gone
      for (uint16_t i : p.at)
        if (buf[i] != p.file[i]) return false;
      return true;
    });
    if (pages.empty() || elapsedMs() >= timeoutMs) return elapsedMs();
    ::usleep(1000);
  }
}

struct Holder {
  int sock;
  // The private bpffs; empty when the holder could not have one (no
  // CAP_SYS_ADMIN: a setcap copy of goscope). Each link then stays with the
  // fork that created it (its keeper), and the holder never has a link's fd
  // in its own table: see create().
  std::string dir;
  uint32_t nextId = 1;
  std::map<uint32_t, Held> ids;

  std::string pinPath(uint32_t id) const { return dir + "/l" + std::to_string(id); }

  // Creates the link in a fork of the holder (the holder may be SIGKILLed at
  // any moment; a task SIGKILLed inside BPF_LINK_CREATE leaks the uprobes it
  // had placed: docs/kernel.md, "Which task leaks a uprobe (Linux 6.18)").
  // The fork runs in a session and process group of its own, so that a kill
  // of the holder's group (or of goscope's) does not reach it: killed alone,
  // the holder leaves it to finish, find nobody to answer and release the
  // link by exiting. Only a SIGKILL aimed at the fork itself can still land
  // inside the create; the holder then sweeps (sweepAfterKilledCreate).
  // With a bpffs the fork pins the link and exits (a trial's pin is
  // unlinked at once). Without one the fork
  // keeps the link's only fd and waits on its socket: the holder closing its
  // end (detach), or dying, makes it exit, and its exit drops the link's last
  // reference. No link fd is ever sent over a socket, nor closed with
  // close(2) while it may be the last reference, by any process of
  // goscope's: the last reference of a link goes in a process's exit, or
  // from a kworker for a pin, the releases a SIGKILL cannot interrupt
  // (docs/kernel.md, "Who drops a uprobe_multi link's last reference").
  int create(const Request& r, int progFd, int dataFd, int fileFd) {
    if (r.cnt == 0 || progFd < 0 || dataFd < 0) return -EINVAL;
    struct stat st{};
    if (::fstat(dataFd, &st) != 0) return -errno;
    const size_t arrays = static_cast<size_t>(r.cnt) * 16;
    const size_t size = static_cast<size_t>(st.st_size);
    if (size <= arrays) return -EINVAL;
    // Mapped, not read and copied: buf's 222,679 offsets and cookies are
    // 3.5 MB, and reading them into zeroed buffers and copying them out again
    // was ~10 ms of every attach. Private and read-only: goscope
    // wrote the memfd before sending it and does not touch it again.
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, dataFd, 0);
    if (map == MAP_FAILED) return -errno;
    struct Unmap {
      void* p;
      size_t n;
      ~Unmap() { ::munmap(p, n); }
    } unmap{map, size};
    const char* data = static_cast<const char*>(map);
    const char* sentPath = data + arrays;
    if (!std::memchr(sentPath, '\0', size - arrays)) return -EINVAL;  // the path ends inside the file
    // The file goscope sent, through this process's own fd for it (the
    // creating fork keeps it); else the path as sent.
    std::shared_ptr<UniqueFd> file;
    std::string pathText = sentPath;
    if (fileFd >= 0) {
      file = std::make_shared<UniqueFd>(::fcntl(fileFd, F_DUPFD_CLOEXEC, 0));
      if (!file->valid()) return -errno;
      pathText = std::string(kSelfFd) + std::to_string(file->get());
    }
    const char* path = pathText.c_str();
    struct stat fileSt{};
    ::stat(path, &fileSt);
    const std::span<const uint64_t> offsets(reinterpret_cast<const uint64_t*>(data), r.cnt);
    const std::span<const uint64_t> cookies(reinterpret_cast<const uint64_t*>(data) + r.cnt, r.cnt);
    uint32_t id = nextId++;
    std::string pin = pinPath(id);
    const bool pins = !dir.empty();
    // A socket rather than a pipe: without a bpffs it stays the holder's
    // line to the keeper, whose read sees EOF when the holder closes its end
    // or dies.
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -errno;
    pid_t child = ::fork();
    if (child < 0) {
      int e = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      return -e;
    }
    if (child == 0) {
      ::setsid();
      keepOnly(sv[1], progFd, file ? file->get() : -1);  // (the mapped offsets and path stay)
      int fd = rawUprobeMultiCreate(progFd, path, offsets.data(), cookies.data(), r.cnt, 0, r.pid);
      int res = fd < 0 ? fd : 0;
      if (fd >= 0 && pins) {
        res = pinObject(fd, pin.c_str());
        if (res == 0) {
          // The pin holds a reference until an RCU grace period after its
          // unlink, so this close is never the last one. A trial's pin goes
          // at once and its link is freed later, from a kworker: the
          // holder's answer, and the search for refused offsets that sends
          // hundreds of trials, need not wait for the unregister.
          ::close(fd);
          if (!r.keep) ::unlink(pin.c_str());
          sendFds(sv[1], &res, sizeof res, -1, -1);
          ::_exit(0);
        }
      }
      sendFds(sv[1], &res, sizeof res, -1, -1);
      if (res == 0 && !pins && r.keep) {
        // The keeper: its fd is the link's only reference until this exit.
        // A failed read other than EINTR (none is expected) ends it too.
        char c;
        while (::read(sv[1], &c, 1) < 0 && errno == EINTR) {
        }
      }
      ::_exit(0);  // a trial's link, or a kept one, is released here
    }
    ::close(sv[1]);
    int res = -EIO;
    int fds[kMaxFds];
    if (recvFds(sv[0], &res, sizeof res, fds) != static_cast<ssize_t>(sizeof res)) res = -EIO;
    for (int fd : fds)
      if (fd >= 0) ::close(fd);  // (none is sent)
    const bool kept = res >= 0 && !pins && r.keep;
    if (!kept) {
      ::close(sv[0]);
      const int status = reap(child);
      if (res == -EIO && WIFSIGNALED(status)) {
        sweepAfterKilledCreate(progFd, path, offsets, cookies, r.pid);
        return -EINTR;
      }
    }
    if (res < 0) return res;
    if (!r.keep) return static_cast<int>(id);
    std::vector<uint64_t> sorted(offsets.begin(), offsets.end());
    std::sort(sorted.begin(), sorted.end());  // detach() searches them (goscope sends them sorted: cheap)
    Held h{pathText, r.pid, std::move(sorted)};
    h.file = std::move(file);
    h.dev = fileSt.st_dev;
    h.ino = fileSt.st_ino;
    if (kept) {
      h.keeper = child;
      h.keeperSock = sv[0];
    }
    ids[id] = std::move(h);
    return static_cast<int>(id);
  }

  // The creating fork died of a signal without answering: killed inside
  // BPF_LINK_CREATE, the kernel may have leaked every uprobe it had placed,
  // their int3 left in the targets (docs/kernel.md, "Which task leaks a
  // uprobe"). A leaked uprobe keeps its place in the kernel's tree: a link
  // on the same offsets reuses it, and that link's clean release removes its
  // int3 again (the leaked object stays, with no int3 and no consumer). So
  // the holder creates the same link once more in a fork of its own session
  // and lets that fork's exit release it. Best effort: a SIGKILL of this
  // fork too, or of the holder now, leaves the int3.
  static void sweepAfterKilledCreate(int progFd, const char* path, std::span<const uint64_t> offsets,
                                     std::span<const uint64_t> cookies, int32_t pid) {
    pid_t child = ::fork();
    if (child == 0) {
      ::setsid();
      keepOnly(progFd, -1);
      rawUprobeMultiCreate(progFd, path, offsets.data(), cookies.data(), static_cast<uint32_t>(offsets.size()), 0,
                           pid);
      ::_exit(0);  // the release, in this exit (docs/kernel.md: an exiting task has no SIGKILL pending)
    }
    if (child > 0) reap(child);
  }

  // Drops the link's last reference in a process that exits, never in the
  // holder, and waits until the probes are off:
  //   - without a bpffs: the holder closes its end of the keeper's socket;
  //     the keeper sees EOF and exits, and its exit releases the link before
  //     the holder's waitpid returns;
  //   - with a bpffs: a fork of the holder in a session of its own takes an
  //     fd from the pin, unlinks the pin and exits. Unlinking the pin alone
  //     would free the link later, from a kworker, after an RCU grace period
  //     (20 ms to 1.9 s measured here before the target's bytes were back:
  //     docs/kernel.md); the fork's exit is the last put unless that grace
  //     period ended first.
  // A SIGKILL of the holder (or of its process group) anywhere in here finds
  // no link fd in it: the keeper or the fork finishes on its own.
  int detach(uint32_t id, int* waitedMs) {
    auto it = ids.find(id);
    if (it == ids.end()) return -ENOENT;
    Held held = std::move(it->second);
    ids.erase(it);
    // Offsets another link held here still probes (Engine::detachPoints
    // re-links what it keeps before it closes the old link) keep their int3:
    // only the others are waited for.
    for (const auto& [otherId, other] : ids)
      if (other.pid == held.pid && other.dev == held.dev && other.ino == held.ino)
        std::erase_if(held.offsets, [&](uint64_t off) {
          return std::binary_search(other.offsets.begin(), other.offsets.end(), off);
        });
    auto pages = probedPages(held);
    if (held.keeper > 0) {
      ::close(held.keeperSock);
      reap(held.keeper);
    } else {
      std::string pin = pinPath(id);
      pid_t child = ::fork();
      if (child == 0) {
        ::setsid();
        keepOnly(-1, -1);
        union bpf_attr a;
        std::memset(&a, 0, sizeof a);
        a.pathname = reinterpret_cast<uint64_t>(pin.c_str());
        const long fd = ::syscall(SYS_bpf, BPF_OBJ_GET, &a, sizeof a);
        const int e = ::unlink(pin.c_str()) == 0 ? 0 : errno;
        ::_exit(fd < 0 && e != 0 ? 1 : 0);  // the fd, if any, goes in this exit
      }
      if (child < 0) {
        if (::unlink(pin.c_str()) != 0) return -errno;  // released from a kworker
      } else if (const int status = reap(child); !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (::unlink(pin.c_str()) != 0 && errno != ENOENT) return -errno;
      }
    }
    // With a pin, its own reference is dropped after an RCU grace period
    // (bpffs frees inodes from an RCU callback): when that comes after the
    // fork's exit, the last put is the pin's and the link is freed later,
    // from a kworker. Either way the answer waits until the probes are off.
    *waitedMs = waitRestored(held.pid, std::move(pages), 5000);
    return 0;
  }

  // Releases every link left (goscope is gone) and returns the exit code.
  int releaseAll(int code) {
    while (!ids.empty()) {
      int waited = 0;
      detach(ids.begin()->first, &waited);
    }
    return code;
  }

  int serve() {
    std::vector<pollfd> watched;
    for (;;) {
      // goscope's requests, and every keeper's socket: a keeper that ends
      // before the holder asked it to (killed) has taken its link's probes
      // with it, which the session must not go on without. The holder then
      // exits, which goscope reports as the holder's death, and which ends
      // the other keepers.
      watched.assign(1, pollfd{sock, POLLIN, 0});
      for (const auto& [id, h] : ids)
        if (h.keeperSock >= 0) watched.push_back({h.keeperSock, POLLIN, 0});
      if (::poll(watched.data(), watched.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return releaseAll(1);
      }
      for (size_t i = 1; i < watched.size(); i++)
        if (watched[i].revents) return releaseAll(1);
      if (!watched[0].revents) continue;
      Request r;
      int fds[kMaxFds];
      ssize_t n = recvFds(sock, &r, sizeof r, fds);
      if (n <= 0) {
        // EOF: goscope is gone (killed: it could not detach). Release what is
        // left the quick way (a kworker's free after the namespace's teardown
        // took up to 2.2 s); if this holder is killed meanwhile, the teardown
        // (or the keepers' EOF) still releases the rest.
        return releaseAll(0);
      }
      Reply rep;
      if (n != static_cast<ssize_t>(sizeof r)) rep.result = -EINVAL;
      else if (r.op == kCreate) rep.result = create(r, fds[0], fds[1], fds[2]);
      else if (r.op == kDetach) rep.result = detach(r.id, &rep.stage);
      else rep.result = -EINVAL;
      for (int fd : fds)
        if (fd >= 0) ::close(fd);
      if (sendFds(sock, &rep, sizeof rep, -1, -1) < 0) return releaseAll(0);
    }
  }
};

// A directory to mount the private bpffs on, inside the holder's own mount
// namespace (the mount is invisible outside it): one that exists.
const char* mountPoint() {
  for (const char* d : {"/sys/fs/bpf", "/mnt", "/tmp"}) {
    struct stat st{};
    if (::stat(d, &st) == 0 && S_ISDIR(st.st_mode)) return d;
  }
  return nullptr;
}

std::string findProgram(std::string& why) {
  if (const char* env = std::getenv("GOSCOPE_LINK_HOLDER"); env && *env) {
    if (std::string(env) == "off") {
      why = "GOSCOPE_LINK_HOLDER=off";
      return {};
    }
    // A goscope with file capabilities (setcap) runs for a user who does
    // not have them: that user's variable must not choose the program that
    // is handed the BPF program's fd (docs/security.md).
    if (::getauxval(AT_SECURE) == 0) return env;
  }
  {
    std::lock_guard<std::mutex> lock(gProgramMutex);
    if (!gProgram.empty()) return gProgram;
  }
  std::vector<std::string> candidates;
#ifdef GOSCOPE_CLI_PATH
  candidates.push_back(GOSCOPE_CLI_PATH);
#endif
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string s(self, static_cast<size_t>(n));
    candidates.push_back(s.substr(0, s.rfind('/') + 1) + "goscope");
  }
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  why = "no goscope executable found to run it (set GOSCOPE_LINK_HOLDER=PATH)";
  return {};
}

// This process's own arguments, appended to the holder's command line so
// that `ps` (and the tests) can tell which session a holder belongs to.
std::vector<std::string> ownArguments() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    out.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  if (!out.empty()) out.erase(out.begin());
  return out;
}

}  // namespace

void setLinkHolderProgram(std::string path) {
  std::lock_guard<std::mutex> lock(gProgramMutex);
  gProgram = std::move(path);
}

int runLinkHolder(int sock) {
  // Deaf to what is meant for goscope (Ctrl-C, a terminal hangup, a closed
  // pipe); its own process group (posix_spawn made it) so a kill of
  // goscope's group does not reach it either.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
    ::sigaction(sig, &ign, nullptr);
  ::setpgid(0, 0);
  ::syscall(SYS_close_range, static_cast<unsigned>(sock) + 1, ~0U, 0);  // nothing else of goscope's
  if (sock != kHolderFd) ::syscall(SYS_close_range, 0U, static_cast<unsigned>(sock) - 1, 0);
  Reply ready;
  const char* dir = mountPoint();
  if (::unshare(CLONE_NEWNS) != 0) ready = {-errno, 1};
  else if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ready = {-errno, 2};
  else if (!dir) ready = {-ENOENT, 3};
  else if (::mount("bpf", dir, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") != 0) ready = {-errno, 4};
  // Without the capability for a namespace and a bpffs (EPERM: a setcap
  // copy has CAP_BPF and CAP_PERFMON only) each link's fd stays with the
  // fork that created it, which is as kill-safe (see Holder::create); it
  // says so in `stage`.
  std::string pinDir = dir ? dir : "";
  // GOSCOPE_LINK_HOLDER_MODE=fds: the same without trying (the kill-safety
  // suite runs it as root); not for a setcap copy's user to choose.
  const char* mode = ::getauxval(AT_SECURE) ? nullptr : std::getenv("GOSCOPE_LINK_HOLDER_MODE");
  if (mode && std::string(mode) == "fds" && ready.result == 0) ready.result = -EPERM;
  if (ready.result == -EPERM) {
    ready = {0, kHoldsFds};
    pinDir.clear();
  }
  if (sendFds(sock, &ready, sizeof ready, -1, -1) < 0 || ready.result != 0) return 1;
  Holder h{sock, pinDir};
  return h.serve();
}

Result<std::shared_ptr<LinkHolder>> LinkHolder::spawn() {
  std::string why;
  std::string program = findProgram(why);
  if (program.empty()) return fail(ErrorKind::External, "no link holder: " + why);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(ErrorKind::External, std::string("no link holder: socketpair: ") + std::strerror(errno));
  UniqueFd mine(sv[0]), theirs(sv[1]);
  // dup2 onto fd 3 in the child clears close-on-exec; from a number that is
  // not 3 itself (dup2 of an fd onto itself would keep the flag).
  UniqueFd theirsHigh(::fcntl(theirs.get(), F_DUPFD_CLOEXEC, 10));
  if (!theirsHigh.valid()) return fail(ErrorKind::External, std::string("no link holder: dup: ") + std::strerror(errno));

  std::vector<std::string> args = {program, kLinkHolderCommand, std::to_string(kHolderFd)};
  for (auto& a : ownArguments()) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, theirsHigh.get(), kHolderFd);
  // Not goscope's stdio: a reader of goscope's output must see its EOF when goscope ends.
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group from the start
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int err = ::posix_spawn(&pid, program.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  theirsHigh.reset();
  theirs.reset();
  if (err != 0) return fail(ErrorKind::External, "no link holder: cannot run " + program + ": " + std::strerror(err));

  std::shared_ptr<LinkHolder> h(new LinkHolder());
  h->sock_ = std::move(mine);
  h->pid_ = pid;
  auto reap = [pid] {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  };
  // Its first message says whether it could set itself up.
  pollfd p{h->sock_.get(), POLLIN, 0};
  int ready = ::poll(&p, 1, 10'000);
  Reply rep{-ETIMEDOUT, 0};
  int fds[kMaxFds];
  if (ready > 0 && recvFds(h->sock_.get(), &rep, sizeof rep, fds) != static_cast<ssize_t>(sizeof rep)) rep = {-EPIPE, 0};
  if (rep.result != 0) {
    if (rep.result == -ETIMEDOUT) ::kill(pid, SIGKILL);
    h->sock_.reset();
    reap();
    static const char* steps[] = {"starting", "unshare(CLONE_NEWNS)", "making its mounts private",
                                  "finding a directory for its bpffs", "mounting a bpffs"};
    const char* step = rep.stage >= 0 && rep.stage <= 4 ? steps[rep.stage] : "starting";
    return fail(ErrorKind::External, std::string("no link holder: ") + step + " failed: " + std::strerror(-rep.result));
  }
  int pp[2];
  if (::pipe2(pp, O_CLOEXEC) != 0) {
    h->sock_.reset();
    reap();
    return fail(ErrorKind::External, std::string("no link holder: pipe: ") + std::strerror(errno));
  }
  h->stopPipeRead_.reset(pp[0]);
  h->stopPipeWrite_.reset(pp[1]);
  h->watcher_ = std::thread([raw = h.get()] { raw->watch(); });
  if (rep.stage == kHoldsFds)
    spdlog::debug("bpf: link holder pid {} ({}), links held as its fds (no CAP_SYS_ADMIN for a private bpffs): "
                  "each by the fork that created it",
                  pid, program);
  else
    spdlog::debug("bpf: link holder pid {} ({}), links pinned in its own mount namespace", pid, program);
  return h;
}

// Waits for the holder's end of the socket to close while goscope runs.
void LinkHolder::watch() {
  pollfd p[2] = {{sock_.get(), POLLRDHUP, 0}, {stopPipeRead_.get(), POLLIN, 0}};
  for (;;) {
    int n = ::poll(p, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || p[1].revents) return;
    if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) break;
  }
  if (closing_.load()) return;
  lost_.store(true);
  int status;
  ::waitpid(pid_, &status, WNOHANG);
  spdlog::debug("bpf: the link holder (pid {}) is gone", pid_);
  if (onLost_) onLost_();
}

LinkHolder::~LinkHolder() {
  closing_.store(true);
  if (stopPipeWrite_.valid()) {
    char c = 1;
    (void)!::write(stopPipeWrite_.get(), &c, 1);
  }
  if (watcher_.joinable()) watcher_.join();
  sock_.reset();  // EOF: the holder exits; its namespace's teardown releases any link left
  // Reaped on the side: its exit (the namespace's teardown) took 20-85 ms
  // measured, which goscope's own exit need not wait for.
  if (pid_ > 0)
    std::thread([pid = pid_] {
      int status;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }).detach();
}

namespace {

// The user will not wait for the holder: a second stop signal, or a SIGTERM
// (a service manager's stop) once the wait has taken half a second.
bool userWillNotWait(long sinceMs) {
  if (stopSignalCount() >= 2) return true;
  if (!terminateRequested()) return false;
  return signal_safe::monotonicMs() - sinceMs >= 500;
}

}  // namespace

int LinkHolder::roundTrip(const void* req, size_t len, int fd1, int fd2, int* extra, int fd3, bool userMayAbandon) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lost_.load() || abandoned_ || !sock_.valid()) return -EPIPE;
  if (sendFds(sock_.get(), req, len, fd1, fd2, fd3) < 0) return -EPIPE;
  if (userMayAbandon) {
    const long t0 = signal_safe::monotonicMs();
    for (;;) {
      pollfd p{sock_.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, 50);
      if (n > 0) break;
      if (n < 0 && errno != EINTR) return -EPIPE;
      if (userWillNotWait(t0)) {
        abandoned_ = true;
        spdlog::warn("bpf: not waiting for the link holder (pid {}) to see the probes off; it takes them off and exits", pid_);
        return -EINTR;
      }
    }
  }
  Reply rep;
  int fds[kMaxFds];
  ssize_t n = recvFds(sock_.get(), &rep, sizeof rep, fds);
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  if (n != static_cast<ssize_t>(sizeof rep)) return -EPIPE;
  if (extra) *extra = rep.stage;
  return rep.result;
}

int LinkHolder::create(int progFd, const std::string& path, pid_t pid, std::span<const uint64_t> offsets,
                       std::span<const uint64_t> cookies, bool keep) {
  if (offsets.empty() || offsets.size() != cookies.size()) return -EINVAL;
  UniqueFd data(::memfd_create("goscope-link", MFD_CLOEXEC));
  if (!data.valid()) return -errno;
  auto put = [&](const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
      ssize_t w = ::write(data.get(), c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      c += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  };
  if (!put(offsets.data(), offsets.size_bytes()) || !put(cookies.data(), cookies.size_bytes()) ||
      !put(path.c_str(), path.size() + 1))
    return -EIO;
  Request r;
  r.op = kCreate;
  r.pid = pid;
  r.cnt = static_cast<uint32_t>(offsets.size());
  r.keep = keep ? 1 : 0;
  // A file named by an fd of this process (/proc/self/fd/N: the file the
  // analysis read, ElfFile::handlePath) goes along with the request: the
  // holder attaches through its own copy of that fd, so the probes go into
  // that very file whatever its path names by now.
  int fileFd = -1;
  if (path.starts_with(kSelfFd)) {
    const std::string n = path.substr(std::strlen(kSelfFd));
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return -EINVAL;
    fileFd = std::stoi(n);
  }
  return roundTrip(&r, sizeof r, progFd, data.get(), nullptr, fileFd);
}

int LinkHolder::detach(uint32_t id) {
  Request r;
  r.op = kDetach;
  r.id = id;
  int waited = 0;
  int res = roundTrip(&r, sizeof r, -1, -1, &waited, -1, true);
  if (waited > 0) spdlog::debug("bpf: link holder: the probes of link {} were off {} ms after its last close", id, waited);
  return res;
}

}  // namespace goscope::bpf
