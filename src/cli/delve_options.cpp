#include "cli/delve_options.hpp"

#include <cstdio>

#include "session/ptrace_privileges.hpp"
#include "target/target.hpp"

namespace goscope::cli {

std::vector<OptionSpec> delveOptionSpecs(std::vector<OptionSpec> extra) {
  std::vector<OptionSpec> specs = {
      {"pid", 'p', true, "the running Go process"},
      {"json", 0, false, "one JSON object per line"},
      {"dlv-arg", 0, true, "pass an option to dlv attach (e.g. --dlv-arg=--check-go-version=false)", true},
      {"help", 'h', false, "this help"},
  };
  specs.insert(specs.end(), extra.begin(), extra.end());
  return specs;
}

pid_t delvePidOrRaise(const Args& args, const std::string& sub) {
  auto p = args.get("pid");
  if (!p) raise({ErrorKind::Usage, sub + ": name the process: -p PID"});
  return orRaise(parsePid(*p));
}

namespace {

// Delve needs DWARF; without it dlv fails after loading the binary with a
// message that does not say what to do instead.
void requireDwarf(pid_t pid) {
  Target t = orRaise(openProcessTarget(pid));
  const ElfFile& elf = t.binary->elf();
  if (elf.section(".debug_info") || elf.section(".zdebug_info")) return;
  raise({ErrorKind::BadTarget,
         t.describe() + " has no DWARF debug info (stripped): Delve cannot read its variables",
         "the BPF path works on it: goscope count/latency/trace -p " + std::to_string(pid) +
             "; Delve needs a build without -ldflags='-s -w'"});
}

void interruptSession(void* session) { static_cast<delve::DelveSession*>(session)->interrupt(); }

}  // namespace

std::unique_ptr<delve::DelveSession> attachOrRaise(pid_t pid, const Args& args) {
  installStopSignals();
  // Before anything is read or started: whether dlv may ptrace it at all
  // (a missing capability, Yama, another user, another debugger already on it).
  orRaise(checkPtracePrivileges(pid));
  requireDwarf(pid);
  delve::DelveOptions options;
  options.extraArgs = args.all("dlv-arg");
  auto s = delve::DelveSession::attach(pid, options);
  if (!s) {
    Error e = s.error();
    // The one refusal a user can override, at their own risk.
    if (e.message.find("outside what the installed Delve") != std::string::npos)
      e.hint += "; or try anyway: --dlv-arg=--check-go-version=false";
    raise(e);
  }
  return std::move(*s);
}

StopHookScope interruptOnStop(delve::DelveSession& session) { return StopHookScope(interruptSession, &session); }

void reportTimings(const delve::DelveSession& session, double totalMs, const char* note) {
  auto t = session.timings();
  std::fprintf(stderr, "goscope: PID %d was stopped %.1f ms%s; attach %.0f ms, detach %.0f ms, %.0f ms end to end\n",
               session.targetPid(), t.stoppedMs, note ? note : "", t.attachMs, t.detachMs, totalMs);
}

Error sessionError(pid_t pid, Error e) {
  if (e.kind != ErrorKind::TargetGone || e.message.find("replaced its program") != std::string::npos) return e;
  return {e.kind, "PID " + std::to_string(pid) + " exited during the session (" + e.message + ")",
          "everything recorded before it exited is printed above"};
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace goscope::cli
