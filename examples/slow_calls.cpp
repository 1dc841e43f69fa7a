// A slow-call logger on goscope's C++ API: every call of FUNC that took
// longer than a threshold, with its arguments, from an event session (BPF
// probes at the entry and every RET; the process never stops).
//                             usage: slow_calls PID FUNC MICROSECONDS [SECONDS]
#include <cstdio>
#include <cstdlib>

#include "api/goscope.hpp"

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "usage: slow_calls PID FUNC MICROSECONDS [SECONDS]\n"), 2;
  goscope::ProbeRequest request;
  request.action = goscope::Action::Trace;
  request.target.pid = std::atoi(argv[1]);
  request.locations = {argv[2]};
  request.capture.args = true;
  request.durationS = argc > 4 ? std::atof(argv[4]) : 0;  // 0: until Ctrl-C
  const double thresholdUs = std::atof(argv[3]);

  auto session = goscope::api::startEventSession(request);
  if (!session) return std::fprintf(stderr, "slow_calls: %s\n", session.error().message.c_str()), 1;
  (*session)->run([&](const goscope::api::Call& call) {
    if (!call.durationNs || *call.durationNs / 1e3 < thresholdUs) return true;
    std::printf("%s took %.0f us:", call.function.c_str(), *call.durationNs / 1e3);
    for (const auto& arg : call.args) std::printf(" %s=%s", arg.name.c_str(), goscope::renderText(arg).c_str());
    std::printf("\n");
    return std::fflush(stdout) == 0;
  });
  return 0;  // the session detached when run() returned
}
