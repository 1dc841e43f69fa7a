// api::openTarget: the request's target, opened once for the whole command
// (the binary is read once; planning and the session share it).
#include "api/goscope.hpp"
#include "process/ptrace_privileges.hpp"

namespace goscope::api {

Result<TracedTarget> openTarget(const ProbeRequest& r) {
  // A bad pattern is the user's first mistake to hear about, before anything
  // is opened or started.
  if (r.action == Action::Count || r.action == Action::Latency || r.action == Action::Trace)
    if (auto p = patternsOf(r); !p) return p.failure();
  // Before the target is opened or a -c command started: without the
  // capabilities nothing the in-kernel subcommands do can be attached, and
  // the error should say so first (not after a command has run unobserved).
  const bool bpfAction = r.action == Action::Count || r.action == Action::Latency || r.action == Action::Trace;
  if (bpfAction)
    if (auto ok = checkBpfPrivileges(); !ok) return ok.failure();
  auto t = TracedTarget::open(r.target);
  if (t) return t;
  Error e = t.error();
  // An executable /proc will not show: the ptrace check says more precisely
  // what is missing (another user's process, no CAP_SYS_PTRACE).
  if (e.kind == ErrorKind::Permission && r.target.pid)
    if (auto ok = checkPtracePrivileges(*r.target.pid); !ok) {
      // The check speaks of dlv; the in-kernel subcommands need the same
      // access for goscope itself, and so does read's direct read, which
      // serves a plain variable without Delve: process_vm_readv is a ptrace
      // access check of its own (docs/security.md).
      Error p = ok.error();
      const std::string delve = "Delve needs CAP_SYS_PTRACE to attach to ";
      if (p.message.rfind(delve, 0) == 0) {
        if (bpfAction)
          p.message = std::string(actionName(r.action)) + ": goscope needs CAP_SYS_PTRACE to probe " +
                      p.message.substr(delve.size());
        else if (r.action == Action::Read) {
          p.message = "read: goscope needs CAP_SYS_PTRACE to read the memory of " + p.message.substr(delve.size());
          const std::string dlvLacks = "capabilities goscope's dlv would not have";
          if (auto at = p.message.find(dlvLacks); at != std::string::npos)
            p.message.replace(at, dlvLacks.size(), "capabilities goscope does not have");
        }
      }
      return fail(p);
    }
  if (e.kind == ErrorKind::Usage) e.message = std::string(actionName(r.action)) + ": " + e.message;
  return fail(e);
}

}  // namespace goscope::api
