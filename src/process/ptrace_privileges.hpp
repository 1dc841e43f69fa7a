// Up-front check for the Delve path: will the dlv goscope starts be allowed
// to ptrace the target? dlv's own refusal comes only after it has started
// and read the binary, and says "operation not permitted" without saying
// which capability or sysctl is in the way. This says it before any work.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "util/result.hpp"

namespace goscope {

// What decides whether a ptrace attach is allowed (ptrace(2), "Ptrace access
// mode checking", and Documentation/admin-guide/LSM/Yama.rst).
struct PtraceFacts {
  int yamaScope = 0;             // /proc/sys/kernel/yama/ptrace_scope; 0 without Yama
  bool tracerHasSysPtrace = false;  // the dlv we exec will hold CAP_SYS_PTRACE
  uid_t tracerUid = 0;           // our real uid (dlv inherits it)
  bool targetSameUser = false;   // the target's real, effective and saved uid are ours
  uid_t targetUid = 0;           // the target's effective uid
  bool targetCapsCovered = true; // the target's permitted capabilities are a subset of dlv's
  pid_t targetTracer = 0;        // the process whose thread traces the target (TracerPid's): 0 when none
};

// Reads the facts for `pid` from /proc. NotFound when it does not exist.
Result<PtraceFacts> readPtraceFacts(pid_t pid);

// Pure: a Permission error naming what is missing (CAP_SYS_PTRACE, the
// Yama scope, another user's process) or a Usage/BadTarget error when
// another tracer holds the target; success when an attach can work.
Result<void> judgePtrace(pid_t pid, const PtraceFacts& f);

// Both, for `pid`.
Result<void> checkPtracePrivileges(pid_t pid);

// The name of a process, from /proc/PID/comm ("?" when unreadable).
std::string processName(pid_t pid);

inline constexpr int kCapSysPtrace = 19;  // linux/capability.h

// The thread group (process) `tid` belongs to, from /proc/TID/status: equal
// to `tid` for a process, another PID for a thread, 0 when unreadable.
pid_t threadGroupOf(pid_t tid);

// This process's effective set holds capability number `cap`.
bool selfHasCapability(int cap);

// The capabilities `pid` holds (permitted set) that this process's
// effective set lacks, named as "CAP_SYS_RESOURCE, CAP_..."; empty when
// none or unreadable.
std::string capabilitiesBeyondOurs(pid_t pid);

// "CAP_SYS_PTRACE" for 19; "capability 63" for numbers past the table.
std::string capabilityName(int cap);

}  // namespace goscope
