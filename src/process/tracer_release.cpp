// Async-signal-safe on purpose (see tracer_release.hpp): no allocation, no
// stdio, no locks. The kernel facts it relies on are in docs/delve.md, "When
// dlv dies".
#include "process/tracer_release.hpp"
#include "util/signal_safe.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace goscope {

namespace {

using Path = signal_safe::FixedText<128>;
using signal_safe::hexFieldOf;
using signal_safe::readSmallFile;
using signal_safe::sleepUs;

long nowMs() { return signal_safe::monotonicMs(); }

// "/proc/<pid>[/task/<tid>]/<leaf>".
Path procPath(pid_t pid, const char* leaf) {
  Path p;
  p.add("/proc/").num(static_cast<uint64_t>(pid)).add("/").add(leaf);
  return p;
}

Path taskPath(pid_t pid, pid_t tid, const char* leaf) {
  Path p;
  p.add("/proc/").num(static_cast<uint64_t>(pid)).add("/task/").num(static_cast<uint64_t>(tid)).add("/").add(leaf);
  return p;
}

// State letter and exit_code (field 52: for a thread in a ptrace stop, the
// signal its restart will deliver; 0 once the tracer has collected the stop
// with wait(2), which clears it) of one thread.
char threadState(pid_t pid, pid_t tid, long* exitCode) {
  char stat[1024];
  Path p = taskPath(pid, tid, "stat");
  size_t n = readSmallFile(p.data, stat, sizeof stat);
  size_t rp = n;
  for (size_t i = 0; i < n; ++i)
    if (stat[i] == ')') rp = i;
  if (rp + 2 >= n) return '?';
  const char st = stat[rp + 2];
  if (exitCode) {
    int field = 3;
    size_t i = rp + 2;
    for (; i < n && field < 52; ++i)
      if (stat[i] == ' ') ++field;
    long v = 0;
    bool neg = i < n && stat[i] == '-';
    for (i += neg; i < n && stat[i] >= '0' && stat[i] <= '9'; ++i) v = v * 10 + (stat[i] - '0');
    *exitCode = neg ? -v : v;
  }
  return st;
}

long decField(const char* text, size_t len, const char* key) {
  const size_t k = ::strlen(key);
  for (size_t i = 0; k <= len && i + k <= len; ++i) {
    if ((i == 0 || text[i - 1] == '\n') && ::memcmp(text + i, key, k) == 0) {
      size_t j = i + k;
      while (j < len && (text[j] == ' ' || text[j] == '\t')) ++j;
      long v = 0;
      for (; j < len && text[j] >= '0' && text[j] <= '9'; ++j) v = v * 10 + (text[j] - '0');
      return v;
    }
  }
  return -1;
}

constexpr uint64_t sigBit(int sig) { return uint64_t(1) << (sig - 1); }

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

// The thread ids of `pid`, at most `cap`.
int listThreads(pid_t pid, pid_t* out, int cap) {
  Path dir = procPath(pid, "task");
  int fd = ::open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  int n = 0;
  alignas(8) char ents[4096];
  for (;;) {
    long got = ::syscall(SYS_getdents64, fd, ents, sizeof ents);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      auto* d = reinterpret_cast<Dirent64*>(ents + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      long v = 0;
      for (const char* c = d->name; *c; ++c) v = v * 10 + (*c - '0');
      if (n < cap) out[n++] = static_cast<pid_t>(v);
    }
  }
  ::close(fd);
  return n;
}

// Signals pending for the process (shared) and for any of the listed threads.
uint64_t pendingSignals(pid_t pid, const pid_t* tids, int n, pid_t* trapThread) {
  char status[4096];
  Path p = procPath(pid, "status");
  size_t len = readSmallFile(p.data, status, sizeof status);
  uint64_t mask = len ? hexFieldOf(status, len, "ShdPnd:") : 0;
  if (trapThread) *trapThread = -1;
  for (int i = 0; i < n; ++i) {
    Path tp = taskPath(pid, tids[i], "status");
    size_t tl = readSmallFile(tp.data, status, sizeof status);
    if (!tl) continue;
    uint64_t own = hexFieldOf(status, tl, "SigPnd:");
    if (trapThread && (own & sigBit(SIGTRAP)) && *trapThread < 0) *trapThread = tids[i];
    mask |= own;
  }
  return mask;
}

bool readMem(int mem, uint64_t addr, void* out, size_t n) {
  return mem >= 0 && ::pread(mem, out, n, static_cast<off_t>(addr)) == static_cast<ssize_t>(n);
}
bool writeMem(int mem, uint64_t addr, const void* in, size_t n) {
  return mem >= 0 && ::pwrite(mem, in, n, static_cast<off_t>(addr)) == static_cast<ssize_t>(n);
}

int patchIndex(const ReleaseTarget& t, uint64_t addr) {
  for (int i = 0; i < t.patchCount; ++i)
    if (t.patches[i].addr == addr) return i;
  return -1;
}

bool isHandler(const ReleaseTarget& t, uint64_t rip) {
  for (int i = 0; i < t.handlerCount; ++i)
    if (t.handlers[i] != 0 && t.handlers[i] == rip) return true;
  return false;
}

#if defined(__x86_64__)
// The x86-64 rt_sigframe the kernel builds below a handler's stack pointer
// (arch/x86/include/asm/sigframe.h): the return address (sa_restorer, Go's
// runtime.sigreturn__sigaction), then struct ucontext (uc_flags, uc_link,
// uc_stack: 40 bytes, then struct sigcontext, 256 bytes, then the 8-byte
// signal mask: 304), then struct siginfo.
constexpr uint64_t kUcontext = 8;
constexpr uint64_t kSigcontext = kUcontext + 40;
constexpr uint64_t kSavedRip = kSigcontext + 16 * 8;     // after r8-r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp
constexpr uint64_t kSavedFlags = kSigcontext + 17 * 8;
constexpr uint64_t kSiginfo = kUcontext + 304;
constexpr uint64_t kTrapFlag = 0x100;
constexpr int kSiKernel = 0x80;  // si_code of the SIGTRAP an int3 raises

// A thread just past an instruction of one byte at a patched address: did it
// execute that instruction (while the debugger had taken its int3 out to step
// over it), or did it trap on the int3 and the debugger died before moving it
// back? 1: it trapped, 0: it executed it, -1: cannot tell.
int trappedBeforeOneByte(uint8_t op, const user_regs_struct& regs, int mem) {
  if (op == 0xC3 || op == 0xCB) return 1;  // a ret never leaves the next byte as the pc
  if (op >= 0x50 && op <= 0x57 && op != 0x54) {  // push reg: executed iff its value is on top of the stack
    const unsigned long long vals[8] = {regs.rax, regs.rcx, regs.rdx, regs.rbx, regs.rsp, regs.rbp, regs.rsi, regs.rdi};
    uint64_t top = 0;
    if (!readMem(mem, regs.rsp, &top, sizeof top)) return -1;
    return top == vals[op - 0x50] ? 0 : 1;
  }
  if (op == 0x90) return 0;  // nop: running on from the next byte is the same either way
  return -1;
}

bool isOneByte(uint8_t op) {
  return (op >= 0x50 && op <= 0x5F) || op == 0x90 || op == 0xC3 || op == 0xCB || op == 0xC9 || op == 0x98 ||
         op == 0x99 || op == 0x9C || op == 0x9D || op == 0x9E || op == 0x9F || op == 0xF4 || op == 0xF5 ||
         (op >= 0xF8 && op <= 0xFD) || op == 0xCC || op == 0xCE || op == 0xD7 || op == 0xEC || op == 0xED ||
         op == 0xEE || op == 0xEF || op == 0x6C || op == 0x6D || op == 0x6E || op == 0x6F || (op >= 0xA4 && op <= 0xA7) ||
         (op >= 0xAA && op <= 0xAF);
}

// One thread, seized and stopped in the group stop: make it safe to run.
void fixThread(const ReleaseTarget& t, const ReleaseState& s, pid_t tid, int mem, ReleaseReport& r) {
  user_regs_struct regs{};
  if (::ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) {
    ++r.unreleased;
    return;
  }
  ++r.examined;
  bool wasTraced = false, wasTrap = false;
  for (int i = 0; i < s.count; ++i)
    if (s.tids[i] == tid) {
      wasTraced = s.traced[i];
      wasTrap = s.trap[i];
    }
  if (wasTrap && r.trapThreadPc == 0) {
    r.trapThreadPc = regs.rip;
    int signo = -1;
    if (readMem(mem, regs.rsp + kSiginfo, &signo, sizeof signo)) r.trapFrameSigno = signo;
  }

  if (isHandler(t, regs.rip)) {
    // A SIGTRAP whose stop the tracer never collected was delivered as the
    // tracer died: the kernel built the handler's frame, then our SIGSTOP
    // stopped the thread before the handler's first instruction.
    const uint64_t frame = regs.rsp;
    uint64_t restorer = 0;
    int info[3] = {0, 0, 0};  // si_signo, si_errno, si_code
    if (readMem(mem, frame, &restorer, sizeof restorer) && readMem(mem, frame + kSiginfo, info, sizeof info) &&
        info[0] == SIGTRAP && restorer != 0) {
      uint64_t rip = 0, flags = 0;
      readMem(mem, frame + kSavedRip, &rip, sizeof rip);
      readMem(mem, frame + kSavedFlags, &flags, sizeof flags);
      if (info[2] == kSiKernel && patchIndex(t, rip - 1) >= 0) {  // an int3's trap: the pc is one past it
        rip -= 1;
        ++r.rewound;
        writeMem(mem, frame + kSavedRip, &rip, sizeof rip);
      }
      if (flags & kTrapFlag) {
        flags &= ~kTrapFlag;
        writeMem(mem, frame + kSavedFlags, &flags, sizeof flags);
      }
      // Return from the handler without running it: the frame's own
      // sigreturn restores every register, the signal mask and the stack.
      regs.rip = restorer;
      regs.rsp = frame + 8;
      regs.orig_rax = static_cast<unsigned long long>(-1);  // no system call to restart
      if (::ptrace(PTRACE_SETREGS, tid, nullptr, &regs) == 0) ++r.framesUndone;
      else ++r.unreleased;
      return;
    }
  }
  bool changed = false;
  const bool stepping = regs.eflags & kTrapFlag;
  if (stepping) {  // released in the middle of a single-step: the next instruction would trap
    regs.eflags &= ~kTrapFlag;
    ++r.stepFlagsCleared;
    changed = true;
  }
  const int pi = patchIndex(t, regs.rip - 1);
  if (!stepping && wasTraced && pi >= 0 && pi < 256 && s.heldInt3[pi]) {
    // Stopped just past an int3 that was in place: it trapped there and the
    // debugger died before moving it back (it does so only once every
    // thread is stopped), unless the instruction is one byte long and the
    // thread ran it during a step-over.
    const uint8_t op = t.patches[pi].original;
    const int trapped = isOneByte(op) ? trappedBeforeOneByte(op, regs, mem) : 1;
    if (trapped == 1) {
      regs.rip -= 1;
      ++r.rewound;
      changed = true;
    } else if (trapped < 0) {
      ++r.ambiguous;
    }
  }
  if (changed && ::ptrace(PTRACE_SETREGS, tid, nullptr, &regs) != 0) ++r.unreleased;
}
#else
void fixThread(const ReleaseTarget&, const ReleaseState&, pid_t, int, ReleaseReport& r) { ++r.unreleased; }
#endif

// Waits for `tid` (seized) to report a stop; false after `deadline`.
bool awaitStop(pid_t tid, long deadline, int* status) {
  for (;;) {
    pid_t w = ::waitpid(tid, status, __WALL | WNOHANG);
    if (w == tid) return WIFSTOPPED(*status);
    if (w < 0 && errno != EINTR) return false;
    if (nowMs() >= deadline) return false;
    sleepUs(200);
  }
}

}  // namespace

bool sameExecutable(pid_t pid, uint64_t dev, uint64_t ino) {
  if (ino == 0) return true;
  Path exe = procPath(pid, "exe");
  struct stat st {};
  if (::stat(exe.data, &st) != 0) return false;
  return st.st_ino == ino && st.st_dev == dev;
}

pid_t tracerOf(pid_t pid) {
  char status[4096];
  Path p = procPath(pid, "status");
  size_t len = readSmallFile(p.data, status, sizeof status);
  if (!len) return -1;
  return static_cast<pid_t>(decField(status, len, "TracerPid:"));
}

void releaseHold(const ReleaseTarget& t, ReleaseState& s, ReleaseReport& r) {
  s.count = 0;
  s.needFinish = false;
  r.handlers = t.handlerCount;
  for (bool& b : s.heldInt3) b = false;
  const char leader = threadState(t.pid, t.pid, nullptr);
  if (leader == 'Z' || leader == 'X' || leader == '?') {
    r.gone = true;  // dead: the kernel lets its parent reap it once the tracer is gone
    return;
  }
  if (!sameExecutable(t.pid, t.exeDev, t.exeIno)) {
    r.execed = true;  // the patches are addresses in the old program
  } else {
    Path mp = procPath(t.pid, "mem");
    const int mem = t.memFd >= 0 ? t.memFd : ::open(mp.data, O_RDWR | O_CLOEXEC);
    if (mem < 0) r.gone = true;
    for (int i = 0; mem >= 0 && i < t.patchCount; ++i) {
      const TextPatch& p = t.patches[i];
      uint8_t b = 0;
      if (!readMem(mem, p.addr, &b, 1) || b != p.expected || p.original == p.expected) continue;
      if (i < 256) s.heldInt3[i] = true;
      ++r.bytesFound;
      uint8_t back = 0;
      if (writeMem(mem, p.addr, &p.original, 1) && readMem(mem, p.addr, &back, 1) && back == p.original) ++r.bytesRestored;
    }
    if (mem >= 0 && mem != t.memFd) ::close(mem);
  }
  s.count = listThreads(t.pid, s.tids, ReleaseState::kMaxThreads);
  r.threads = s.count;
  if (s.count == 0) r.gone = true;
  for (int i = 0; i < s.count; ++i) {
    long code = 0;
    const char st = threadState(t.pid, s.tids[i], &code);
    s.traced[i] = st == 't';
    s.trap[i] = s.traced[i] && code == SIGTRAP;
    if (s.traced[i]) ++r.tracedStops;
    if (s.trap[i]) ++r.trapStops;
  }
  const uint64_t pending = pendingSignals(t.pid, s.tids, s.count, nullptr);
  const bool trouble = r.tracedStops > 0 || (pending & (sigBit(SIGTRAP) | sigBit(SIGSTOP)));
  s.needFinish = !r.execed && !r.gone && !t.stoppedBefore && trouble;
  if (!s.needFinish) return;
  // Each thread group-stops before its next user instruction: after the
  // signal its stop delivers (a SIGTRAP gets its handler's frame built first,
  // a SIGSTOP of the debugger's starts the group stop itself).
  for (int i = 0; i < s.count; ++i) ::syscall(SYS_tgkill, t.pid, s.tids[i], SIGSTOP);
  r.stopped = true;
}

void releaseFinish(const ReleaseTarget& t, ReleaseState& s, ReleaseReport& r, long timeoutMs) {
  const long deadline = nowMs() + timeoutMs;
  if (!s.needFinish) {
    // A SIGSTOP of the debugger's delivered as the tracer let go group-stops
    // the target; nobody else will resume it.
    if (t.stoppedBefore || r.gone) return;
    for (int i = 0; i < 10; ++i) {
      if (processStopped(t.pid)) {
        ::kill(t.pid, SIGCONT);
        r.resumed = true;
        return;
      }
      sleepUs(5'000);
    }
    return;
  }
  // Every thread in the group stop (T), or gone.
  static pid_t now[ReleaseState::kMaxThreads];
  int n = 0;
  for (;;) {
    n = listThreads(t.pid, now, ReleaseState::kMaxThreads);
    bool all = true;
    for (int i = 0; i < n && all; ++i) {
      const char st = threadState(t.pid, now[i], nullptr);
      all = st == 'T' || st == 'Z' || st == 'X' || st == '?';
    }
    if (all || nowMs() >= deadline) break;
    sleepUs(300);
  }
  if (n == 0) {
    r.gone = true;
    return;
  }
  Path mp = procPath(t.pid, "mem");
  const int mem = ::open(mp.data, O_RDWR | O_CLOEXEC);
  static bool seized[ReleaseState::kMaxThreads];
  for (int i = 0; i < n; ++i) {
    seized[i] = false;
    // Seizing a group-stopped thread makes it trap into a ptrace stop at
    // once (JOBCTL_TRAP_STOP): its registers are ours to read and write.
    if (::ptrace(PTRACE_SEIZE, now[i], nullptr, nullptr) != 0) {
      ++r.unreleased;
      continue;
    }
    seized[i] = true;
    int st = 0;
    if (!awaitStop(now[i], deadline + 1000, &st)) {
      ::ptrace(PTRACE_INTERRUPT, now[i], nullptr, nullptr);
      if (!awaitStop(now[i], nowMs() + 1000, &st)) {
        ++r.unreleased;
        continue;
      }
    }
    fixThread(t, s, now[i], mem, r);
  }
  // A SIGTRAP still pending (a halt of the debugger's that met a thread
  // already stopped) would kill the target at its next delivery: take it
  // as the tracer, which discards it.
  for (int attempt = 0; attempt < 4; ++attempt) {
    pid_t owner = -1;
    if (!(pendingSignals(t.pid, now, n, &owner) & sigBit(SIGTRAP))) break;
    int idx = -1;
    for (int i = 0; i < n; ++i)
      if (seized[i] && (owner < 0 || now[i] == owner)) {
        idx = i;
        break;
      }
    if (idx < 0) break;
    const pid_t tid = now[idx];
    ::ptrace(PTRACE_CONT, tid, nullptr, nullptr);
    const long until = nowMs() + 1000;
    bool drained = false;
    for (;;) {
      int st = 0;
      if (!awaitStop(tid, until, &st)) break;
      const int sig = WSTOPSIG(st);
      const int event = st >> 16;
      if (event == 0 && sig == SIGTRAP) {
        // Detaching from a signal-delivery stop with no signal drops it;
        // the thread goes back into the group stop.
        ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
        seized[idx] = false;
        ++r.trapsDrained;
        drained = true;
        break;
      }
      if (event == 0) ::ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
      else ::ptrace(PTRACE_CONT, tid, nullptr, nullptr);
    }
    if (!drained && seized[idx]) {
      ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
      int st = 0;
      awaitStop(tid, nowMs() + 1000, &st);
    }
  }
  for (int i = 0; i < n; ++i)
    if (seized[i]) ::ptrace(PTRACE_DETACH, now[i], nullptr, nullptr);
  if (mem >= 0) ::close(mem);
  if (!t.stoppedBefore) {
    ::kill(t.pid, SIGCONT);
    r.resumed = true;
  }
}

}  // namespace goscope
