#include "backend/bpf/privileges.hpp"

#include <linux/bpf.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "backend/bpf/uprobe_multi_link.hpp"

namespace goscope::bpf {

namespace {
constexpr int kCapSysPtrace = 19;
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

bool hasCap(const __user_cap_data_struct data[2], int cap) {
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}
}  // namespace

Capabilities currentCapabilities() {
  Capabilities c;
  c.root = ::geteuid() == 0;
  __user_cap_header_struct hdr{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return c;
  c.sysAdmin = hasCap(data, kCapSysAdmin);
  c.bpf = hasCap(data, kCapBpf);
  c.perfmon = hasCap(data, kCapPerfmon);
  c.sysPtrace = hasCap(data, kCapSysPtrace);
  c.permitted = static_cast<uint64_t>(data[1].permitted) << 32 | data[0].permitted;
  return c;
}

Result<AccessScope> decideAccessScope(const Capabilities& caps, bool initialUserNs, uint32_t uid, uint32_t gid) {
  if (caps.sysPtrace && initialUserNs) return AccessScope{.everyone = true};
  if (!initialUserNs)
    // The program compares the kernel's ids; ours are another namespace's.
    return fail(ErrorKind::Permission,
                "goscope runs in a user namespace without CAP_SYS_PTRACE in the initial one: the BPF path cannot "
                "tell which processes are its user's",
                "run it in the initial user namespace (as root, or with setcap cap_bpf,cap_perfmon+ep: "
                "docs/security.md)");
  return AccessScope{.everyone = false, .uid = uid, .gid = gid, .capsCeiling = caps.permitted};
}

namespace {
// "0 0 4294967295": the identity map of the initial user namespace.
bool inInitialUserNamespace() {
  std::ifstream in("/proc/self/uid_map");
  unsigned long long inside = 1, outside = 1, count = 0;
  if (!(in >> inside >> outside >> count)) return true;  // no /proc: nothing to tell it by
  std::string more;
  return inside == 0 && outside == 0 && count == 4294967295ULL && !(in >> more);
}
}  // namespace

Result<AccessScope> currentAccessScope() {
  return decideAccessScope(currentCapabilities(), inInitialUserNamespace(), ::getuid(), ::getgid());
}

std::string accessNotice(const AccessScope& scope) {
  if (scope.everyone) return "";
  return "goscope: not fully privileged (no CAP_SYS_PTRACE): only processes of uid " + std::to_string(scope.uid) +
         " that it may ptrace are traced; calls of other processes are dropped (docs/security.md)";
}

std::string foreignCallsLine(uint64_t calls) {
  return "goscope: " + std::to_string(calls) +
         " calls by processes of other users were not shown (goscope is not fully privileged: see docs/security.md)";
}

Result<void> checkPrivileges() {
  Capabilities c = currentCapabilities();
  if (c.sysAdmin || (c.bpf && c.perfmon)) return {};
  std::string missing;
  if (!c.bpf) missing += "CAP_BPF";
  if (!c.perfmon) missing += std::string(missing.empty() ? "" : " and ") + "CAP_PERFMON";
  return fail(ErrorKind::Permission,
              "the BPF backend needs " + missing + " (or CAP_SYS_ADMIN); this process has " +
                  (c.root ? "uid 0 but not those capabilities" : "neither"),
              "run as root (sudo goscope ...), or grant them: setcap cap_bpf,cap_perfmon+ep $(which goscope) "
              "(that goscope then sees only its user's own processes: docs/security.md); "
              "in a container add --cap-add BPF --cap-add PERFMON (and SYS_PTRACE to see other users' processes)");
}

Result<void> checkBpfAvailable() {
  // bpf(2) itself: ENOSYS means a kernel without CONFIG_BPF_SYSCALL.
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  long r = ::syscall(SYS_bpf, BPF_PROG_GET_NEXT_ID, &attr, sizeof attr);
  if (r < 0 && errno == ENOSYS)
    return fail(ErrorKind::External, "this kernel has no bpf() system call (CONFIG_BPF_SYSCALL is off)",
                "use the Delve backend (--backend delve), or a kernel built with BPF support");
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return fail(ErrorKind::External, "this kernel exposes no BTF at /sys/kernel/btf/vmlinux",
                "the BPF programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y; "
                "use the Delve backend (--backend delve) on this machine");
  int ok = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, nullptr);
  if (ok == 0)
    return fail(ErrorKind::External, "this kernel cannot load kprobe/uprobe BPF programs",
                "a kernel with CONFIG_BPF_EVENTS and CONFIG_UPROBES is needed, or use --backend delve");
  if (ok < 0 && (ok == -EPERM || ok == -EACCES))
    return fail(ErrorKind::Permission, "loading a BPF program was refused (" + std::string(std::strerror(-ok)) + ")",
                "run as root, or with CAP_BPF and CAP_PERFMON; check kernel.unprivileged_bpf_disabled and LSMs");
  if (probeKernelFeatures().uprobePmuType < 0 && !probeKernelFeatures().uprobeMulti)
    return fail(ErrorKind::External, "this kernel has neither uprobe_multi links nor the uprobe perf PMU",
                "a kernel with CONFIG_UPROBES and CONFIG_UPROBE_EVENTS is needed");
  return {};
}

KernelFeatures probeKernelFeatures() {
  static const KernelFeatures cached = [] {
    KernelFeatures f;
    if (std::ifstream in("/sys/bus/event_source/devices/uprobe/type"); in) {
      int t = -1;
      if (in >> t) f.uprobePmuType = t;
    }
    // A trivial program loaded for uprobe_multi; a link on "/" fails with
    // EBADF when the kernel knows the attach type (it reached the path check),
    // and a pid of -1 fails with EINVAL once the pid filter is per process
    // (the same probes as libbpf's features.c).
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
    const struct bpf_insn insns[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts);
    if (prog < 0) return f;
    uint64_t offset = 0;
    int e1 = rawUprobeMultiCreate(prog, "/", &offset, nullptr, 1, 0, 0);
    if (e1 >= 0) ::close(e1);
    f.uprobeMulti = e1 == -EBADF;
    if (f.uprobeMulti) {
      int e2 = rawUprobeMultiCreate(prog, "/", &offset, nullptr, 1, 0, -1);
      if (e2 >= 0) ::close(e2);
      f.uprobeMultiPidFilter = e2 == -EINVAL;
    }
    ::close(prog);
    return f;
  }();
  return cached;
}

}  // namespace goscope::bpf
