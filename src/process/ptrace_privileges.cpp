#include "process/ptrace_privileges.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace goscope {

namespace {

uint64_t capMask(const std::string& hex) {
  try {
    return std::stoull(hex, nullptr, 16);
  } catch (...) {
    return 0;
  }
}

// "Key:\tvalue..." lines of /proc/PID/status.
std::string statusField(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  return {};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "dlv, under goscope PID 123": a dlv of another goscope session is the
// usual tracer, and its parent (goscope's guardian, a fork of goscope) says
// whose session it is.
pid_t parentOf(pid_t pid) {
  std::istringstream field(statusField(slurp("/proc/" + std::to_string(pid) + "/status"), "PPid"));
  pid_t parent = 0;
  return field >> parent ? parent : 0;
}

std::string describeTracer(pid_t tracer) {
  std::string out = processName(tracer);
  pid_t parent = parentOf(tracer);
  if (parent <= 1) return out;
  // dlv's parent is goscope's guardian ("gs-guardian", a fork of goscope
  // that renamed itself), under the goscope the user ran: name that one.
  // (The guardian's name can read "goscope" for a moment after its fork.)
  auto isOurs = [](const std::string& n) { return n == "goscope" || n == "gs-guardian"; };
  for (pid_t up = parentOf(parent); up > 1 && processName(up) == "goscope" && isOurs(processName(parent));
       up = parentOf(up))
    parent = up;
  return out + ", under " + processName(parent) + " PID " + std::to_string(parent);
}

}  // namespace

std::string processName(pid_t pid) {
  std::string s = slurp("/proc/" + std::to_string(pid) + "/comm");
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.empty() ? "?" : s;
}

pid_t threadGroupOf(pid_t tid) {
  std::istringstream field(statusField(slurp("/proc/" + std::to_string(tid) + "/status"), "Tgid"));
  pid_t tgid = 0;
  return field >> tgid ? tgid : 0;
}

bool selfHasCapability(int cap) {
  return (capMask(statusField(slurp("/proc/self/status"), "CapEff")) >> cap) & 1u;
}

std::string capabilityName(int cap) {
  // linux/capability.h, in number order.
  static constexpr const char* kNames[] = {
      "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
      "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
      "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
      "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
      "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
      "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"};
  if (cap >= 0 && cap < static_cast<int>(std::size(kNames))) return std::string("CAP_") + kNames[cap];
  return "capability " + std::to_string(cap);
}

std::string capabilitiesBeyondOurs(pid_t pid) {
  std::string target = slurp("/proc/" + std::to_string(pid) + "/status");
  if (target.empty()) return {};
  uint64_t extra = capMask(statusField(target, "CapPrm")) & ~capMask(statusField(slurp("/proc/self/status"), "CapEff"));
  std::string out;
  for (int cap = 0; cap < 64; cap++)
    if ((extra >> cap) & 1u) out += (out.empty() ? "" : ", ") + capabilityName(cap);
  return out;
}

Result<PtraceFacts> readPtraceFacts(pid_t pid) {
  PtraceFacts f;
  std::string target = slurp("/proc/" + std::to_string(pid) + "/status");
  if (target.empty()) return fail(ErrorKind::NotFound, "no process with PID " + std::to_string(pid));
  if (std::ifstream scope("/proc/sys/kernel/yama/ptrace_scope"); scope) scope >> f.yamaScope;

  // Capabilities do not follow goscope into dlv the same way for everyone:
  // exec as uid 0 grants the whole bounding set; exec as another uid keeps
  // only the ambient set (file capabilities on goscope do not pass on).
  std::string self = slurp("/proc/self/status");
  f.tracerUid = ::getuid();
  const uint64_t dlvCaps = ::geteuid() == 0 ? capMask(statusField(self, "CapBnd")) : capMask(statusField(self, "CapAmb"));
  f.tracerHasSysPtrace = (dlvCaps >> kCapSysPtrace) & 1u;
  // Without CAP_SYS_PTRACE the kernel also wants the target's permitted
  // capabilities to be a subset of the tracer's (cap_ptrace_access_check):
  // a root goscope with CAP_SYS_PTRACE dropped cannot trace a root process.
  f.targetCapsCovered = (capMask(statusField(target, "CapPrm")) & ~dlvCaps) == 0;

  std::istringstream uids(statusField(target, "Uid"));
  uid_t real = 0, eff = 0, saved = 0;
  uids >> real >> eff >> saved;
  f.targetUid = eff;
  f.targetSameUser = real == f.tracerUid && eff == f.tracerUid && saved == f.tracerUid;
  std::istringstream tracer(statusField(target, "TracerPid"));
  tracer >> f.targetTracer;
  // TracerPid is the tracing *thread* (fs/proc/array.c: task_pid_nr_ns of
  // the tracer): dlv traces from one of its Go threads, often not its main
  // one. The process is what a person can find and wait for.
  if (f.targetTracer > 0)
    if (pid_t process = threadGroupOf(f.targetTracer); process > 0) f.targetTracer = process;
  return f;
}

Result<void> judgePtrace(pid_t pid, const PtraceFacts& f) {
  const std::string p = "PID " + std::to_string(pid);
  // One tracer per process: a second attach would fail inside dlv with
  // "operation not permitted", which reads like a missing privilege.
  if (f.targetTracer > 0)
    return fail(ErrorKind::BadTarget,
                p + " is already traced by PID " + std::to_string(f.targetTracer) + " (" + describeTracer(f.targetTracer) +
                    "); a process can have one debugger at a time",
                "wait for that session to end, or use the BPF path alongside it: goscope count/latency/trace -p " +
                    std::to_string(pid));
  if (f.yamaScope >= 3)
    return fail(ErrorKind::Permission,
                "kernel.yama.ptrace_scope is 3: no process may ptrace another, so Delve cannot attach to " + p,
                "only a reboot lowers it; the BPF path works: goscope count/latency/trace");
  if (f.tracerHasSysPtrace) return {};
  if (f.yamaScope == 2)
    return fail(ErrorKind::Permission,
                "Delve needs CAP_SYS_PTRACE to attach to " + p + " (kernel.yama.ptrace_scope is 2: admin only)",
                "run as root (sudo goscope ...)");
  if (f.yamaScope == 1)
    return fail(ErrorKind::Permission,
                "Delve needs CAP_SYS_PTRACE to attach to " + p +
                    " (kernel.yama.ptrace_scope is 1: only a parent may trace without it)",
                "run as root (sudo goscope ...), or allow it: sysctl kernel.yama.ptrace_scope=0");
  if (!f.targetSameUser)
    return fail(ErrorKind::Permission,
                "Delve needs CAP_SYS_PTRACE to attach to " + p + ": it runs as uid " + std::to_string(f.targetUid) +
                    ", goscope as uid " + std::to_string(f.tracerUid),
                "run goscope as that user or as root");
  if (!f.targetCapsCovered)
    return fail(ErrorKind::Permission,
                "Delve needs CAP_SYS_PTRACE to attach to " + p +
                    ": it holds capabilities goscope's dlv would not have",
                "run as root with CAP_SYS_PTRACE (e.g. not under setpriv/capsh dropping it; in a container: --cap-add SYS_PTRACE)");
  return {};
}

Result<void> checkPtracePrivileges(pid_t pid) {
  auto f = readPtraceFacts(pid);
  if (!f) return f.failure();
  return judgePtrace(pid, *f);
}

}  // namespace goscope
