// The talks' counter demo on goscope's C++ API: count main.doWork's calls in
// the kernel and read main.counter on each hit, once a second, without ever
// stopping the process.            usage: counter_reader PID [SECONDS]
#include <cstdio>
#include <cstdlib>

#include "api/goscope.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: counter_reader PID [SECONDS]\n"), 2;
  goscope::ProbeRequest request;
  request.action = goscope::Action::Count;
  request.target.pid = std::atoi(argv[1]);
  request.locations = {"main.doWork"};
  request.readVariable = "main.counter";
  request.intervalS = 1;
  request.durationS = argc > 2 ? std::atof(argv[2]) : 3;

  auto plan = goscope::api::plan(request);  // which path, and why
  if (!plan) return std::fprintf(stderr, "counter_reader: %s\n", plan.error().message.c_str()), 1;
  std::printf("%s", goscope::explainPlan(*plan).c_str());
  auto session = goscope::api::AggregateSession::start(request);
  if (!session) return std::fprintf(stderr, "counter_reader: %s\n", session.error().message.c_str()), 1;
  (*session)->run([](const goscope::api::CountSnapshot& s) {
    std::printf("%.1f s: main.doWork called %llu times, main.counter = %lld\n", s.elapsedS,
                static_cast<unsigned long long>(s.functions[0].count), static_cast<long long>(s.readValue.value_or(-1)));
    std::fflush(stdout);
  });
  return 0;  // the session detaches when it goes out of scope
}
