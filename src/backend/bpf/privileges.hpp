// Up-front checks for the BPF path: does this process have the privileges,
// and does this kernel have what the engine needs? Each failure says what is
// missing and how to fix it, before anything is loaded or attached.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.hpp"

namespace goscope::bpf {

struct Capabilities {
  bool root = false;      // effective uid 0
  bool sysAdmin = false;  // CAP_SYS_ADMIN (implies the two below for BPF and perf)
  bool bpf = false;       // CAP_BPF (39): maps, programs
  bool perfmon = false;   // CAP_PERFMON (38): tracing programs, perf-event uprobes
  bool sysPtrace = false; // CAP_SYS_PTRACE (19): ptrace (and so read) any process
  uint64_t permitted = 0; // the whole permitted set, bit n = capability n
};

// The calling thread's effective capabilities (capget(2)).
Capabilities currentCapabilities();

// Whose processes a BPF session may see. The uprobes of `-b` fire in every
// process that runs the file, and an uprobe's program reads whatever it
// likes: without a filter, `setcap cap_bpf,cap_perfmon+ep goscope` would let
// any user read every user's calls. So unless goscope is fully privileged,
// the programs drop (and count) every call of a task goscope's user could
// not ptrace (bpf/goscope.bpf.c, access_filter; docs/security.md).
struct AccessScope {
  bool everyone = false;   // fully privileged: no filter
  uint32_t uid = 0;        // otherwise: the caller's real uid and gid (kernel ids) ...
  uint32_t gid = 0;
  uint64_t capsCeiling = 0;  // ... and the capabilities a visible task may hold (ours)
};

// The one rule: fully privileged = CAP_SYS_PTRACE in the effective set, in
// the initial user namespace (the capability that lets the kernel's own
// ptrace check pass for any process; root without it may not ptrace a
// process with more capabilities either). Pure: unit-tested.
// `initialUserNs`: /proc/self/uid_map is the identity map, so getuid() is
// the kernel's id that the program compares with.
Result<AccessScope> decideAccessScope(const Capabilities& caps, bool initialUserNs, uint32_t uid, uint32_t gid);
// The same for this process.
Result<AccessScope> currentAccessScope();
// One line for the start of a session that is filtered; empty when not.
std::string accessNotice(const AccessScope& scope);
// One line for its end: how many calls were dropped (docs/errors.md).
std::string foreignCallsLine(uint64_t calls);

// Loading kprobe-type programs and creating uprobe links needs CAP_BPF and
// CAP_PERFMON (or CAP_SYS_ADMIN). Permission error naming the missing ones.
Result<void> checkPrivileges();

// Kernel support: the bpf() syscall, BTF at /sys/kernel/btf/vmlinux (the
// programs are CO-RE), kprobe-type programs, uprobes. Errors are
// ErrorKind::External (missing kernel feature) or Permission, with a hint.
Result<void> checkBpfAvailable();

// What the kernel offers for attaching (probed with trivial programs).
struct KernelFeatures {
  bool uprobeMulti = false;          // BPF_TRACE_UPROBE_MULTI links (6.6+)
  bool uprobeMultiPidFilter = false; // ... whose pid filter is per process (6.9+, backported)
  int uprobePmuType = -1;            // /sys/bus/event_source/devices/uprobe/type
};
KernelFeatures probeKernelFeatures();

}  // namespace goscope::bpf
