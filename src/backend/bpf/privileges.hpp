// Up-front checks for the BPF path: does this process have the privileges,
// and does this kernel have what the engine needs? Each failure says what is
// missing and how to fix it, before anything is loaded or attached.
#pragma once

#include <string>

#include "util/result.hpp"

namespace goscope::bpf {

struct Capabilities {
  bool root = false;      // effective uid 0
  bool sysAdmin = false;  // CAP_SYS_ADMIN (implies the two below for BPF and perf)
  bool bpf = false;       // CAP_BPF (39): maps, programs
  bool perfmon = false;   // CAP_PERFMON (38): tracing programs, perf-event uprobes
};

// The calling thread's effective capabilities (capget(2)).
Capabilities currentCapabilities();

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
