// Async-signal-safe on purpose: only system calls, fixed buffers, no
// allocation (see guardian.hpp for why).
#include "backend/delve/guardian.hpp"

#include "process/text_restore.hpp"
#include "util/signal_safe.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace goscope::delve::guardian {

namespace {

constexpr uint64_t kFirstId = uint64_t(1) << 40;  // far from goscope's ids
constexpr int kReplyTimeoutMs = 10'000;
constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD (Linux 6.9)

int gNotifyFd = -1;  // the listener of dlv's write filter (see serveWrites), -1 without one
void serveWrites();

using Text = signal_safe::FixedText<512>;

long nowMs() { return signal_safe::monotonicMs(); }
void sleepMs(long ms) { signal_safe::sleepUs(ms * 1000L); }

bool contains(const char* hay, size_t len, const char* needle) {
  size_t n = ::strlen(needle);
  for (size_t i = 0; n <= len && i <= len - n; ++i)
    if (::memcmp(hay + i, needle, n) == 0) return true;
  return false;
}

// goscope's connection to dlv, read line by line: Go's jsonrpc writes each
// reply as one JSON line that starts {"id":N,. A line goscope had half read
// when it died simply does not start that way and is skipped.
class Conn {
 public:
  explicit Conn(int fd) : fd_(fd) {}

  bool send(const char* method, const char* params, uint64_t id) {
    Text t;
    t.add("{\"method\":\"RPCServer.").add(method).add("\",\"params\":[").add(params).add("],\"id\":").num(id).add("}");
    if (!t.ok) return false;
    for (size_t off = 0; off < t.len;) {
      ssize_t n = ::send(fd_, t.data + off, t.len - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads until the reply to `id`; its first bytes stay in reply(). False on
  // EOF (dlv gone), error or timeout.
  bool await(uint64_t id, int timeoutMs) {
    const long deadline = nowMs() + timeoutMs;
    for (;;) {
      while (pos_ < end_) {
        char c = buf_[pos_++];
        if (c != '\n') {
          if (headLen_ < sizeof head_) head_[headLen_++] = c;
          continue;
        }
        const bool match = headId() == id;
        ::memcpy(reply_, head_, headLen_);
        replyLen_ = headLen_;
        headLen_ = 0;
        if (match) return true;
      }
      long left = deadline - nowMs();
      if (left <= 0) return false;
      // dlv's writes wait on the guardian (serveWrites): a Detach clears
      // breakpoints, so answer them while waiting for its reply.
      pollfd p[2] = {{fd_, POLLIN, 0}, {gNotifyFd, POLLIN, 0}};
      int r = ::poll(p, 2, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      if (p[1].revents) serveWrites();
      if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fd_, buf_, sizeof buf_);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      pos_ = 0;
      end_ = static_cast<size_t>(n);
    }
  }
  bool replyHas(const char* s) const { return contains(reply_, replyLen_, s); }

 private:
  uint64_t headId() const {
    static const char kPrefix[] = "{\"id\":";
    const size_t p = sizeof kPrefix - 1;
    if (headLen_ <= p || ::memcmp(head_, kPrefix, p) != 0) return ~uint64_t(0);
    uint64_t v = 0;
    size_t i = p;
    for (; i < headLen_ && head_[i] >= '0' && head_[i] <= '9'; ++i) v = v * 10 + static_cast<uint64_t>(head_[i] - '0');
    return i == p ? ~uint64_t(0) : v;
  }

  int fd_;
  char buf_[16384];
  size_t pos_ = 0, end_ = 0;
  char head_[256];  // the first bytes of the line being read
  size_t headLen_ = 0;
  char reply_[256];  // ... of the last complete line
  size_t replyLen_ = 0;
};

// ---- a pending SIGTRAP (see pending_signals.hpp), without allocating ----

// SIGTRAP in the signal mask of `key` ("ShdPnd:", "SigPnd:").
bool trapBit(const char* status, size_t len, const char* key) {
  return (signal_safe::hexFieldOf(status, len, key) & signal_safe::signalBit(SIGTRAP)) != 0;
}

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

bool trapPending(pid_t target) {
  char status[8192];
  Text path;
  path.add("/proc/").num(static_cast<uint64_t>(target)).add("/status");
  size_t n = signal_safe::readSmallFile(path.data, status, sizeof status);
  if (n == 0) return false;  // gone
  if (trapBit(status, n, "ShdPnd:")) return true;
  Text dir;
  dir.add("/proc/").num(static_cast<uint64_t>(target)).add("/task");
  int fd = ::open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool pending = false;
  alignas(8) char ents[8192];
  for (;;) {
    long got = ::syscall(SYS_getdents64, fd, ents, sizeof ents);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      auto* d = reinterpret_cast<Dirent64*>(ents + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      Text task;
      task.add(dir.data).add("/").add(d->name).add("/status");
      size_t tn = signal_safe::readSmallFile(task.data, status, sizeof status);
      if (tn && trapBit(status, tn, "SigPnd:")) pending = true;
    }
  }
  ::close(fd);
  return pending;
}

// The target runs another executable than when goscope started (stat(2) is
// async-signal-safe).
bool targetExeced(const Plan& plan) {
  if (plan.exeIno == 0) return false;
  Text path;
  path.add("/proc/").num(static_cast<uint64_t>(plan.target)).add("/exe");
  struct stat st {};
  if (::stat(path.data, &st) != 0) return false;  // gone
  return st.st_ino != plan.exeIno || st.st_dev != plan.exeDev;
}

// The target exited (a zombie, or gone).
bool targetDead(pid_t target) {
  Text path;
  path.add("/proc/").num(static_cast<uint64_t>(target)).add("/stat");
  char stat[512];
  size_t n = signal_safe::readSmallFile(path.data, stat, sizeof stat);
  size_t rp = n;
  for (size_t i = 0; i < n; ++i)
    if (stat[i] == ')') rp = i;
  if (rp + 2 >= n) return true;
  return stat[rp + 2] == 'Z' || stat[rp + 2] == 'X';
}

// ---- the careful detach, as DelveSession::detach() does it ----

void carefulDetach(int sock, pid_t target, int64_t maxBreakpoint) {
  Conn c(sock);
  uint64_t id = kFirstId;
  auto running = [&]() -> int {  // 1 running, 0 stopped, -1 dlv gone
    if (!c.send("State", "{\"NonBlocking\":true}", ++id) || !c.await(id, kReplyTimeoutMs)) return -1;
    return c.replyHas("\"Running\":true") ? 1 : 0;
  };
  auto halt = [&]() -> bool {  // the halt's reply comes once the target stopped
    return c.send("Command", "{\"name\":\"halt\"}", ++id) && c.await(id, kReplyTimeoutMs);
  };
  int r = running();
  if (r < 0) return;
  if (r == 1 && !halt()) return;
  // A halt that met a stopped target left a SIGTRAP pending: clear the
  // breakpoints so that only our halt can stop it, let Delve swallow the
  // signal as it resumes, halt again.
  for (int attempt = 0; attempt < 3 && trapPending(target); ++attempt) {
    for (int64_t b = 1; b <= maxBreakpoint; ++b) {
      Text p;
      p.add("{\"Id\":").num(static_cast<uint64_t>(b)).add(",\"Name\":\"\"}");
      if (c.send("ClearBreakpoint", p.data, ++id)) c.await(id, kReplyTimeoutMs);
    }
    if (!c.send("Command", "{\"name\":\"continue\"}", ++id)) return;
    sleepMs(20);
    r = running();
    if (r < 0) return;
    if (r == 1 && !halt()) return;
  }
  if (c.send("Detach", "{\"Kill\":false}", ++id)) c.await(id, kReplyTimeoutMs);
}

// Asks Delve to take out every breakpoint it holds: its own, which it sets
// at attach (unrecovered-panic -1, runtime-fatal-throw -2; Delve 1.20 to
// 1.27 alike), and goscope's (1..maxBreakpoint). Delve writes the bytes it
// saved back. True only when Delve then lists none: the target's code is
// the file's again, whatever goscope had or had not told us. The target
// must be halted under Delve (its RPCs refuse a running one).
bool clearEveryBreakpoint(int sock, int64_t maxBreakpoint) {
  Conn c(sock);
  uint64_t id = kFirstId + (uint64_t(1) << 20);  // apart from carefulDetach's, which may follow
  for (const char* own : {"{\"Id\":-1,\"Name\":\"\"}", "{\"Id\":-2,\"Name\":\"\"}"})
    if (!c.send("ClearBreakpoint", own, ++id) || !c.await(id, kReplyTimeoutMs)) return false;
  for (int64_t b = 1; b <= maxBreakpoint; ++b) {
    Text p;
    p.add("{\"Id\":").num(static_cast<uint64_t>(b)).add(",\"Name\":\"\"}");
    if (!c.send("ClearBreakpoint", p.data, ++id) || !c.await(id, kReplyTimeoutMs)) return false;
  }
  // An id that did not exist was an error reply, not a failure: the list decides.
  if (!c.send("ListBreakpoints", "{\"All\":true}", ++id) || !c.await(id, kReplyTimeoutMs)) return false;
  return c.replyHas("\"Breakpoints\":[]") || c.replyHas("\"Breakpoints\":null");
}

// ---- Delve's int3 bytes, when dlv is gone without detaching ----

// Where Delve wrote an int3 (goscope's breakpoints and Delve's own), with
// the executable file's byte there, and the target's SIGTRAP handlers; sent
// by goscope as each is created. In a MAP_SHARED page made before any fork:
// the sentinel reads what the guardian writes later.
constexpr int kMaxPatches = 1024;
constexpr int kMaxHandlers = 4;
struct Shared {
  TextPatch patches[kMaxPatches];
  int patchCount;  // __atomic: written by the guardian, read by the sentinel
  uint64_t handlers[kMaxHandlers];
  int handlerCount;
};
Shared* gShared = nullptr;
Shared gLocal;  // if the shared page could not be made (the sentinel then sees what was there at its fork)

int patchCount() { return __atomic_load_n(&gShared->patchCount, __ATOMIC_ACQUIRE); }

void notePatch(uint64_t addr, uint8_t original) {
  const int n = patchCount();
  for (int i = 0; i < n; ++i)
    if (gShared->patches[i].addr == addr) return;
  if (n >= kMaxPatches) return;
  gShared->patches[n] = TextPatch{addr, original, 0xCC};
  __atomic_store_n(&gShared->patchCount, n + 1, __ATOMIC_RELEASE);
}

void noteHandler(uint64_t addr) {
  const int n = __atomic_load_n(&gShared->handlerCount, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i)
    if (gShared->handlers[i] == addr) return;
  if (n >= kMaxHandlers) return;
  gShared->handlers[n] = addr;
  __atomic_store_n(&gShared->handlerCount, n + 1, __ATOMIC_RELEASE);
}

// dlv died (SIGKILL, OOM, a crash) without its Detach and without the
// sentinel (not started yet, or killed): the kernel has detached its
// tracees and they run again with Delve's int3 bytes in their code; the next
// hit is an untraced SIGTRAP that kills the target. Put the file's bytes
// back at once (a no-op when Delve or the sentinel restored them).
int gTargetMem = -1;  // /proc/TARGET/mem, opened at the start (its writes fail once the target exec'd)
pid_t gPlanTarget = -1;

void restoreAfterDlv(const Plan& plan) {
  restoreText(plan.target, gShared->patches, patchCount(), plan.stoppedBefore, plan.exeDev, plan.exeIno);
  // A SIGSTOP of Delve's (it stops every other thread at each hit) that it
  // had not collected yet is delivered once the tracer is gone: the target
  // group-stops. Resume it, unless the user had stopped it.
  // (Delivered as the threads were released, before dlv could be reaped: a
  // target running now stays running; goscope's clean exit waits for this.)
  for (int i = 0; i < 5 && !plan.stoppedBefore; ++i) {
    if (processStopped(plan.target)) ::kill(plan.target, SIGCONT);
    else if (i == 0) break;
    sleepMs(10);
  }
}

// The moment dlv's tracer thread is gone: the target already runs, and the
// next hit kills it. Write at once; restoreAfterDlv() checks again later.
void restoreNow(const Plan& plan) {
  if (gTargetMem >= 0)
    restoreText(plan.target, gShared->patches, patchCount(), plan.stoppedBefore, 0, 0, /*stopFirst=*/false, gTargetMem);
  else restoreAfterDlv(plan);
}

void closeAllBut(int* keep, int n);

// ---- the sentinel: holds dlv's tracer thread as it dies ----

void setRealtime() {
  // Woken by a stop of dlv's tracer thread, it must answer before dlv
  // waits long (each signal dlv's thread gets stops it until answered) and,
  // without the hold, before the target's next hit: a normal thread waits
  // milliseconds for a CPU on a loaded machine. Real-time priority when
  // allowed (root), not inherited by anything forked; it only ever runs
  // briefly between blocking calls.
  sched_param sp{};
  sp.sched_priority = 1;
  ::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp);
}

void rescue(const Plan& plan, pid_t tracerTid) {
  static ReleaseState state;
  ReleaseTarget t;
  t.pid = plan.target;
  t.patches = gShared->patches;
  t.patchCount = patchCount();
  t.handlers = gShared->handlers;
  t.handlerCount = __atomic_load_n(&gShared->handlerCount, __ATOMIC_ACQUIRE);
  t.stoppedBefore = plan.stoppedBefore;
  t.exeDev = plan.exeDev;
  t.exeIno = plan.exeIno;
  t.memFd = gTargetMem;
  SentinelRecord rec;
  // Whether dlv still holds the target: after a clean Detach it does not,
  // and there is nothing to do.
  rec.held = tracerOf(plan.target) == tracerTid ? 1 : 0;
  if (rec.held) releaseHold(t, state, rec.report);
  ::ptrace(PTRACE_DETACH, tracerTid, nullptr, nullptr);  // dlv's thread exits; the kernel lets the target go
  if (rec.held) releaseFinish(t, state, rec.report, 5'000);
  rec.magic = kSentinelDone;
  if (plan.reportFd >= 0) (void)!::pwrite(plan.reportFd, &rec, sizeof rec, 0);
}

[[noreturn]] void runSentinel(const Plan& plan, pid_t tracerTid) {
  ::prctl(PR_SET_NAME, kSentinelName);
  // Only what it needs: not the control socket nor the connection to dlv,
  // whose EOF others wait for.
  int keep[2] = {plan.reportFd, gTargetMem};
  closeAllBut(keep, 2);
  setRealtime();
  if (::ptrace(PTRACE_SEIZE, tracerTid, nullptr, reinterpret_cast<void*>(PTRACE_O_TRACEEXIT)) != 0) ::_exit(1);
  for (;;) {
    int st = 0;
    pid_t w = ::waitpid(tracerTid, &st, __WALL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) ::_exit(0);
    if (!WIFSTOPPED(st)) continue;
    const int event = st >> 16, sig = WSTOPSIG(st);
    if (event == PTRACE_EVENT_EXIT) {
      rescue(plan, tracerTid);
      ::_exit(0);
    }
    if (event == PTRACE_EVENT_STOP) {
      // dlv stopped by a stop signal (its group stop): keep it stopped, as
      // it would be untraced.
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) ::ptrace(PTRACE_LISTEN, tracerTid, nullptr, nullptr);
      else ::ptrace(PTRACE_CONT, tracerTid, nullptr, nullptr);
      continue;
    }
    // A signal for dlv's thread (Go's preemption SIGURG, ...): delivered as
    // if nobody traced it.
    ::ptrace(PTRACE_CONT, tracerTid, nullptr, reinterpret_cast<void*>(static_cast<long>(event == 0 ? sig : 0)));
  }
}

// ---- dlv's writes into the target, made through the guardian ----
//
// Delve writes the target's memory with PTRACE_POKEDATA (and with
// process_vm_writev for more than 8 bytes, falling back to PTRACE_POKEDATA
// when that fails). Both write into whatever program the target runs at that
// moment: when the target execs while Delve steps over a breakpoint, Delve's
// write of the old program's byte lands in the new program (seen: main.doWork's
// first byte of the old program in the new one, 9 ms after the exec). So dlv
// runs under a seccomp filter that hands each PTRACE_POKEDATA to the guardian
// (SECCOMP_RET_USER_NOTIF) and refuses process_vm_writev; the guardian makes
// the write through its /proc/TARGET/mem, which is bound to the program the
// target ran when the guardian started: after an exec that write fails, and
// dlv gets EIO instead of corrupting the new program.


// Installed in dlv's process just before its execve; the listener goes to
// the guardian over `sock`. Without it (no seccomp, not allowed) dlv runs
// as before.
void installWriteFilter(int sock) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_POKEDATA, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_POKETEXT, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  int nfd = static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
  char tag = nfd >= 0 ? 'N' : 'X';
  iovec iov{&tag, 1};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nfd >= 0) {
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    ::memcpy(CMSG_DATA(c), &nfd, sizeof nfd);
  }
  (void)!::sendmsg(sock, &msg, MSG_NOSIGNAL);
  if (nfd >= 0) ::close(nfd);
  ::close(sock);
}

// The listener from dlv's process (or -1), waiting up to `ms`.
int receiveWriteFilter(int sock, int ms) {
  pollfd p{sock, POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) return -1;
  char tag = 0;
  iovec iov{&tag, 1};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  if (::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) <= 0 || tag != 'N') return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      ::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      return fd;
    }
  }
  return -1;
}

bool threadOfTarget(pid_t target, pid_t tid) {
  Text path;
  path.add("/proc/").num(static_cast<uint64_t>(target)).add("/task/").num(static_cast<uint64_t>(tid));
  struct stat st {};
  return ::stat(path.data, &st) == 0;
}

// Answers every write dlv is waiting on; never blocks.
void serveWrites() {
  for (int served = 0; served < 256; ++served) {
    if (gNotifyFd < 0) return;
    pollfd p{gNotifyFd, POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return;
    if (p.revents & (POLLHUP | POLLERR)) {  // dlv is gone
      ::close(gNotifyFd);
      gNotifyFd = -1;
      return;
    }
    seccomp_notif req;
    ::memset(&req, 0, sizeof req);
    if (::ioctl(gNotifyFd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;  // the caller died meanwhile
    seccomp_notif_resp resp;
    ::memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    const pid_t tid = static_cast<pid_t>(req.data.args[1]);
    const uint64_t addr = req.data.args[2], word = req.data.args[3];
    if (!threadOfTarget(gPlanTarget, tid)) {
      resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;  // not our target's memory: dlv's own business
    } else if (gTargetMem >= 0 && ::pwrite(gTargetMem, &word, sizeof word, static_cast<off_t>(addr)) == sizeof word) {
      resp.val = 0;
    } else {
      resp.error = -EIO;  // the target exec'd (its old program is gone) or exited
    }
    ::ioctl(gNotifyFd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}

// ---- the process ----

void sendMessage(int fd, char type, const void* payload, size_t len) {
  char buf[16];
  buf[0] = type;
  ::memcpy(buf + 1, payload, len);
  (void)!::send(fd, buf, len + 1, MSG_NOSIGNAL);
}

[[noreturn]] void spawnDlv(const Plan& plan, pid_t guardian, int filterSock) {
  // dlv dies with the guardian, never with goscope directly: SIGKILL, not
  // dlv's own shutdown (its halt can cross a hit and leave a SIGTRAP for
  // after its Detach), and the sentinel makes that death safe.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != guardian) ::_exit(126);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
  ::dup2(plan.nullFd, 0);
  ::dup2(plan.stdoutFd, 1);
  ::dup2(plan.stderrFd, 2);
  installWriteFilter(filterSock);
  ::execve(plan.dlvPath, plan.dlvArgv, plan.envp);
  ::_exit(127);
}

// Closes every descriptor from 3 up but `keep` (-1 entries ignored).
void closeAllBut(int* keep, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (keep[j] < keep[i]) {
        int t = keep[i];
        keep[i] = keep[j];
        keep[j] = t;
      }
  unsigned from = 3;
  for (int i = 0; i < n; ++i) {
    const int k = keep[i];
    if (k < static_cast<int>(from)) continue;
    if (static_cast<unsigned>(k) > from) ::syscall(SYS_close_range, from, static_cast<unsigned>(k) - 1, 0);
    from = static_cast<unsigned>(k) + 1;
  }
  ::syscall(SYS_close_range, from, ~0U, 0);
}

// Keeps only the descriptors the guardian needs: holding goscope's others
// (a pipe someone waits to see closed) would outlive goscope.
void closeOtherFds(const Plan& plan) {
  int keep[5] = {plan.controlFd, plan.stdoutFd, plan.stderrFd, plan.nullFd, plan.reportFd};
  closeAllBut(keep, 5);
}

void waitDlvExit(pid_t dlv, int pidfd, long timeoutMs) {
  const long deadline = nowMs() + timeoutMs;
  for (;;) {
    int st;
    if (::waitpid(dlv, &st, WNOHANG) != 0) return;  // reaped, or not ours
    long left = deadline - nowMs();
    if (left <= 0) return;
    pollfd p[2] = {{pidfd, POLLIN, 0}, {gNotifyFd, POLLIN, 0}};
    ::poll(p, 2, static_cast<int>(pidfd >= 0 ? left : (left < 20 ? left : 20)));
    if (p[1].revents) serveWrites();
  }
}

}  // namespace

void run(const Plan& plan) {
  // Its own process group and deaf to the usual signals: a Ctrl-C or a
  // SIGTERM meant for goscope must not take the guardian down with it.
  ::setpgid(0, 0);
  ::prctl(PR_SET_NAME, kProcessName);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGHUP, SIGTERM, SIGPIPE, SIGQUIT}) ::sigaction(sig, &ign, nullptr);
  closeOtherFds(plan);
  ::dup2(plan.nullFd, 0);
  ::dup2(plan.nullFd, 1);
  ::dup2(plan.nullFd, 2);
  void* page = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  gShared = page == MAP_FAILED ? &gLocal : static_cast<Shared*>(page);

  // Whether the target was stopped (kill -STOP) before we came: only a stop
  // of our making is undone below.
  const bool stoppedBefore = plan.stoppedBefore;
  const pid_t self = ::getpid();
  gPlanTarget = plan.target;
  {
    char path[64] = "/proc/";
    char digits[16];
    int n = 0;
    for (unsigned v = static_cast<unsigned>(plan.target); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    size_t len = 6;
    while (n > 0) path[len++] = digits[--n];
    ::memcpy(path + len, "/mem", 5);
    gTargetMem = ::open(path, O_RDWR | O_CLOEXEC);
    // The file is bound to the memory the target had when it was opened:
    // checked after, so an exec before the open is seen. A target that
    // runs another program than the one analysed gets none of dlv's writes.
    if (gTargetMem >= 0 && targetExeced(plan)) {
      ::close(gTargetMem);
      gTargetMem = -1;
    }
  }
  int filterPair[2] = {-1, -1};
  (void)!::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, filterPair);
  const pid_t dlv = ::fork();
  if (dlv == 0) {
    if (filterPair[0] >= 0) ::close(filterPair[0]);
    spawnDlv(plan, self, filterPair[1]);
  }
  if (filterPair[1] >= 0) ::close(filterPair[1]);
  if (dlv < 0) {
    int e = errno;
    sendMessage(plan.controlFd, kSpawnFailed, &e, sizeof e);
    ::_exit(1);
  }
  if (filterPair[0] >= 0) {
    gNotifyFd = receiveWriteFilter(filterPair[0], 2'000);
    ::close(filterPair[0]);
  }
  sendMessage(plan.controlFd, kDlvPid, &dlv, sizeof dlv);
  setRealtime();
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, dlv, 0));
  // The target's death while dlv holds it leaves a zombie only its tracer can
  // let its parent reap: dlv is killed then (it has nothing left to do). A
  // pidfd does not say so while dlv has not reaped the dead threads (they
  // stay zombies for their tracer), so the leader's state is looked at too.
  int targetFd = static_cast<int>(::syscall(SYS_pidfd_open, plan.target, 0));
  bool targetDeathSeen = false;

  int sock = -1;
  int64_t maxBreakpoint = 0;
  bool dlvGone = false, tracerGone = false;
  // A pidfd on dlv's tracer thread (PIDFD_THREAD, Linux 6.9+): the kernel
  // detaches the tracee and lets it run as that thread exits, but reports
  // the process's exit (the pidfd above, SIGCHLD) only once every thread is
  // gone and dlv's large address space is torn down: tens of ms later under
  // load. Without the sentinel, the thread's pidfd is the earliest word.
  int tracerFd = -1;
  pid_t sentinel = -1;
  int sentinelFd = -1;
  // After dlv's death: once the sentinel is done (it may still be fixing the
  // target's threads in a group stop a SIGCONT must not end early), check the
  // bytes and the run state once more.
  auto settle = [&](long waitSentinelMs) {
    if (sentinel > 0) {
      const long deadline = nowMs() + waitSentinelMs;
      while (::waitpid(sentinel, nullptr, WNOHANG) == 0 && nowMs() < deadline) {
        if (sentinelFd >= 0) {
          pollfd p{sentinelFd, POLLIN, 0};
          ::poll(&p, 1, 50);
        } else {
          sleepMs(5);
        }
      }
      sentinel = -1;
      if (sentinelFd >= 0) ::close(sentinelFd);
      sentinelFd = -1;
    }
    restoreAfterDlv(plan);
  };
  for (;;) {
    pollfd fds[6] = {{plan.controlFd, POLLIN, 0},
                     {dlvGone ? -1 : pidfd, POLLIN, 0},
                     {tracerFd, POLLIN, 0},
                     {sentinelFd, POLLIN, 0},
                     {targetFd, POLLIN, 0},
                     {gNotifyFd, POLLIN, 0}};
    int r = ::poll(fds, 6, pidfd < 0 && !dlvGone ? 100 : !dlvGone && !targetDeathSeen ? 250 : -1);
    if (r < 0 && errno != EINTR) break;
    if (fds[5].revents) serveWrites();
    if (targetFd >= 0 && (fds[4].revents & (POLLIN | POLLHUP | POLLERR))) {
      ::close(targetFd);
      targetFd = -1;
    }
    if (!targetDeathSeen && !dlvGone && targetDead(plan.target)) {
      targetDeathSeen = true;
      ::kill(dlv, SIGKILL);  // the target is dead: dlv only keeps its zombie from its parent
    }
    if (tracerFd >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      ::close(tracerFd);
      tracerFd = -1;
      tracerGone = true;
      // dlv is dying (or detached cleanly: then nothing is left to restore).
      // The sentinel held the thread and did the work: do not race it.
      if (sentinel <= 0) restoreNow(plan);
    }
    if (sentinelFd >= 0 && (fds[3].revents & (POLLIN | POLLHUP | POLLERR))) {
      ::waitpid(sentinel, nullptr, WNOHANG);
      sentinel = -1;
      ::close(sentinelFd);
      sentinelFd = -1;
      if (tracerGone || dlvGone) restoreAfterDlv(plan);
    }
    if (!dlvGone && (fds[1].revents & POLLIN || pidfd < 0)) {
      int st;
      if (::waitpid(dlv, &st, WNOHANG) == dlv) {
        dlvGone = true;
        settle(10'000);  // whatever killed dlv, goscope may still live: do not wait for it
      }
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;

    char buf[16];
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    ssize_t n = ::recvmsg(plan.controlFd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // goscope is gone without standing us down
      if (!dlvGone) {
        if (targetExeced(plan)) {
          ::kill(dlv, SIGKILL);  // the kernel detaches; nothing is written
          waitDlvExit(dlv, pidfd, 5'000);
          dlvGone = true;
          settle(10'000);  // a halt's SIGSTOP delivered on detach: SIGCONT
        } else if (sock >= 0 && stoppedBefore &&
                   (clearEveryBreakpoint(sock, maxBreakpoint) || patchCount() > 0)) {
          // A target stopped (kill -STOP) before the session stays stopped,
          // as DelveSession::leaveStopped() leaves it: Delve's Detach would
          // SIGCONT it. The session never resumed it (DelveSession::resume
          // refuses), so every thread sits in a ptrace-stop: have Delve take
          // its bytes out (it knows them all, also those goscope died before
          // telling us of), write back any left that we know of, then SIGKILL
          // dlv; the kernel detaches the threads back into their group-stop
          // (docs/kernel.md, "A stopped target").
          restoreNow(plan);
          ::kill(dlv, SIGKILL);
          waitDlvExit(dlv, pidfd, 5'000);
          dlvGone = true;
          settle(10'000);  // checks again; never SIGCONTs (stoppedBefore)
        } else if (sock >= 0) {
          carefulDetach(sock, plan.target, maxBreakpoint);
          // dlv exits after its Detach; if it died instead (killed with
          // goscope, or in the middle), the sentinel took care of it.
          waitDlvExit(dlv, pidfd, 5'000);
          if (::waitpid(dlv, nullptr, WNOHANG) == 0) ::kill(dlv, SIGKILL);  // stuck: the sentinel releases the target
          waitDlvExit(dlv, pidfd, 5'000);
          dlvGone = true;
          settle(10'000);
          // A target stopped before whose breakpoints Delve would not clear
          // and goscope had not told us of: Delve's Detach SIGCONTed it. Stop
          // it again (it ran for Delve's 50 ms at most; docs/kernel.md).
          if (stoppedBefore && !processStopped(plan.target)) ::kill(plan.target, SIGSTOP);
        } else {
          ::kill(dlv, SIGTERM);  // still starting: no breakpoint can exist yet
          // ... but PTRACE_ATTACH queues a SIGSTOP per thread: a dlv that dies
          // in the middle of attaching leaves it pending, and the target
          // group-stops once released (seen by test_kill_safety: zoo in state
          // T for good). Resume it when that stop is ours.
          waitDlvExit(dlv, pidfd, 5'000);
          if (::waitpid(dlv, nullptr, WNOHANG) == 0) ::kill(dlv, SIGKILL);
          waitDlvExit(dlv, pidfd, 5'000);
          dlvGone = true;
          for (int i = 0; i < 10 && !stoppedBefore; ++i) {
            if (processStopped(plan.target)) ::kill(plan.target, SIGCONT);
            sleepMs(20);
          }
          // A dlv that had attached detaches on SIGTERM, and its Detach
          // SIGCONTs a stopped target: stop it again, as the user left it.
          if (stoppedBefore && !processStopped(plan.target)) ::kill(plan.target, SIGSTOP);
        }
      }
      break;
    }
    if (buf[0] == kConnection) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
          int fd;
          ::memcpy(&fd, CMSG_DATA(c), sizeof fd);
          if (sock < 0) sock = fd;
          else ::close(fd);
        }
      }
    } else if (buf[0] == kBreakpoint && n >= 9) {
      int64_t bp;
      ::memcpy(&bp, buf + 1, sizeof bp);
      if (bp > maxBreakpoint) maxBreakpoint = bp;
    } else if (buf[0] == kTracer && n >= 1 + static_cast<ssize_t>(sizeof(pid_t))) {
      pid_t tid;
      ::memcpy(&tid, buf + 1, sizeof tid);
      if (tracerFd < 0) tracerFd = static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread));
      if (sentinel <= 0 && !dlvGone) {
        sentinel = ::fork();
        if (sentinel == 0) runSentinel(plan, tid);
        if (sentinel > 0) sentinelFd = static_cast<int>(::syscall(SYS_pidfd_open, sentinel, 0));
      }
    } else if (buf[0] == kPatch && n >= 10) {
      uint64_t addr;
      ::memcpy(&addr, buf + 1, sizeof addr);
      notePatch(addr, static_cast<uint8_t>(buf[9]));
    } else if (buf[0] == kHandler && n >= 9) {
      uint64_t addr;
      ::memcpy(&addr, buf + 1, sizeof addr);
      noteHandler(addr);
    } else if (buf[0] == kStandDown) {
      break;
    }
  }
  if (sock >= 0) ::close(sock);
  // After Detach dlv exits by itself; if it does not, our exit sends it
  // SIGKILL (its parent-death signal), which the sentinel makes safe.
  if (!dlvGone) waitDlvExit(dlv, pidfd, 5'000);
  // The guardian ends once its job is done: after the sentinel, which ends
  // once dlv's tracer thread has exited.
  if (sentinel > 0 && ::waitpid(dlv, nullptr, WNOHANG) != 0) settle(10'000);
  ::_exit(0);
}

}  // namespace goscope::delve::guardian
