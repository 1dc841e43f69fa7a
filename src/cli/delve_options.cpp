#include "cli/delve_options.hpp"

#include <cstdio>

#include "api/delve_capture.hpp"
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

void interruptSession(void* session) { static_cast<delve::DelveSession*>(session)->interrupt(); }

}  // namespace

std::unique_ptr<delve::DelveSession> attachOrRaise(pid_t pid, const Args& args) {
  installStopSignals();
  return orRaise(api::attachDelve(pid, args.all("dlv-arg")));
}

StopHookScope interruptOnStop(delve::DelveSession& session) { return StopHookScope(interruptSession, &session); }

void reportTimings(const delve::DelveSession& session, double totalMs, const char* note) {
  auto t = session.timings();
  std::fprintf(stderr, "goscope: PID %d was stopped %.1f ms%s; attach %.0f ms, detach %.0f ms, %.0f ms end to end\n",
               session.targetPid(), t.stoppedMs, note ? note : "", t.attachMs, t.detachMs, totalMs);
}

}  // namespace goscope::cli
