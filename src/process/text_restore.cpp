// Async-signal-safe on purpose (see text_restore.hpp): no allocation, no
// stdio, no locks.
#include "process/text_restore.hpp"
#include "util/signal_safe.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace goscope {

namespace {

// "/proc/<pid>/<leaf><leaf2><leaf3>".
struct ProcPath : signal_safe::FixedText<96> {
  ProcPath(pid_t pid, const char* leaf, const char* leaf2 = nullptr, const char* leaf3 = nullptr) {
    add("/proc/").num(static_cast<uint64_t>(pid)).add("/").add(leaf).add(leaf2).add(leaf3);
  }
};

char stateOf(const char* statPath) {
  char stat[1024];
  size_t n = signal_safe::readSmallFile(statPath, stat, sizeof stat);
  size_t rp = n;
  for (size_t i = 0; i < n; ++i)
    if (stat[i] == ')') rp = i;
  return rp + 2 < n ? stat[rp + 2] : '?';
}

bool isStop(char c) { return c == 'T' || c == 't'; }

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

// Every thread of `pid` is stopped (or gone).
bool allThreadsStopped(pid_t pid) {
  ProcPath dir(pid, "task");
  int fd = ::open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return true;  // gone
  bool all = true;
  alignas(8) char ents[4096];
  for (;;) {
    long got = ::syscall(SYS_getdents64, fd, ents, sizeof ents);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      auto* d = reinterpret_cast<Dirent64*>(ents + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      ProcPath st(pid, "task/", d->name, "/stat");
      char s = stateOf(st.data);
      if (s != '?' && !isStop(s)) all = false;
    }
  }
  ::close(fd);
  return all;
}

using signal_safe::sleepUs;
long nowUs() { return signal_safe::monotonicUs(); }

bool holds(int mem, const TextPatch& p) {
  uint8_t b = 0;
  return ::pread(mem, &b, 1, static_cast<off_t>(p.addr)) == 1 && b == p.expected && p.original != p.expected;
}

}  // namespace

bool processStopped(pid_t pid) {
  ProcPath st(pid, "stat");
  return isStop(stateOf(st.data));
}

namespace {
int writePatches(int mem, const TextPatch* patches, int count, TextRestoreReport& r) {
  int wrote = 0;
  for (int i = 0; i < count; ++i) {
    if (!holds(mem, patches[i])) continue;
    ++r.found;
    const uint8_t b = patches[i].original;
    if (::pwrite(mem, &b, 1, static_cast<off_t>(patches[i].addr)) == 1) {
      uint8_t back = 0;
      if (::pread(mem, &back, 1, static_cast<off_t>(patches[i].addr)) == 1 && back == b) ++r.restored;
      ++wrote;
    }
  }
  return wrote;
}
}  // namespace

TextRestoreReport restoreText(pid_t pid, const TextPatch* patches, int count, bool stoppedBefore, uint64_t exeDev,
                              uint64_t exeIno, bool stopFirst, int memFd) {
  TextRestoreReport r;
  if (!stopFirst && memFd >= 0 && exeIno == 0) {
    // The fastest path: no stat, no open.
    writePatches(memFd, patches, count, r);
    return r;
  }
  if (exeIno != 0) {
    ProcPath exe(pid, "exe");
    struct stat st {};
    if (::stat(exe.data, &st) != 0) {
      r.gone = true;
      return r;
    }
    if (st.st_ino != exeIno || st.st_dev != exeDev) {
      r.execed = true;
      return r;
    }
  }
  ProcPath memPath(pid, "mem");
  int mem = memFd >= 0 ? memFd : ::open(memPath.data, O_RDWR | O_CLOEXEC);
  if (mem < 0) {
    r.gone = true;
    return r;
  }
  if (!stopFirst) {
    writePatches(mem, patches, count, r);
    if (mem != memFd) ::close(mem);
    return r;
  }
  bool any = false;
  for (int i = 0; i < count && !any; ++i) any = holds(mem, patches[i]);
  if (!any) {
    if (mem != memFd) ::close(mem);
    return r;
  }
  const bool wasStopped = processStopped(pid);
  if (!wasStopped && ::kill(pid, SIGSTOP) == 0) {
    r.stopped = true;
    const long deadline = nowUs() + 200'000;
    while (!allThreadsStopped(pid) && nowUs() < deadline) sleepUs(200);
  }
  writePatches(mem, patches, count, r);
  if (mem != memFd) ::close(mem);
  if (!stoppedBefore && (r.stopped || wasStopped)) {
    // Also a stop we did not make but nobody wants: a SIGSTOP of Delve's
    // (halt, attach) that the kernel delivered once dlv was gone.
    ::kill(pid, SIGCONT);
    r.resumed = true;
  }
  return r;
}

}  // namespace goscope
