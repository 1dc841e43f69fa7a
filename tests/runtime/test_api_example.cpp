// examples/counter_reader, a program on the public C++ API, against the
// counter fixture: it plans (BPF, with the reason), counts main.doWork's
// calls in the kernel and reads main.counter on each hit, once a second.
#include <doctest/doctest.h>

#include <regex>

#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;

TEST_CASE("api: examples/counter_reader counts and reads the counter through the library") {
  Counter c;
  double before = c.rate();
  c.drainReports();
  int64_t startValue = c.nextReport();
  REQUIRE(startValue > 0);
  auto r = run(examplesDir() + "/counter_reader " + std::to_string(c.pid()) + " 2.5");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto lines = splitLines(r.out);
  REQUIRE(lines.size() >= 3);
  CHECK(lines[0] == "plan: bpf");
  const std::regex sample(R"(\d+\.\d s: main\.doWork called (\d+) times, main\.counter = (-?\d+))");
  std::vector<std::pair<long long, long long>> samples;
  for (const auto& l : lines) {
    std::smatch m;
    if (std::regex_match(l, m, sample)) samples.push_back({std::stoll(m[1]), std::stoll(m[2])});
  }
  REQUIRE(samples.size() == 2);
  for (const auto& [calls, value] : samples) {
    CHECK(calls > 0);
    CHECK(value > startValue);  // read from the live process, after it started
  }
  CHECK(samples[1].first > samples[0].first);
  CHECK(samples[1].second > samples[0].second);
  checkUnharmed(c, before);
}

TEST_CASE("api: a bad request comes back as an error value, not a crash") {
  auto r = run(examplesDir() + "/counter_reader 4000000 1");
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("counter_reader: no process with PID 4000000") != std::string::npos);
}

TEST_CASE("api: examples/slow_calls logs the calls slower than a threshold, with their arguments") {
  // zoo's main.sleepWork(ms) sleeps 1 to 5 ms; a 3 ms threshold keeps the slow ones.
  Child zoo({fixture("zoo"), "--sleep-ms", "20"});
  auto r = run(examplesDir() + "/slow_calls " + std::to_string(zoo.pid()) + " main.sleepWork 3000 3");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  const std::regex line(R"(main\.sleepWork took (\d+) us: ms=(\d+))");
  int logged = 0;
  for (const auto& l : splitLines(r.out)) {
    std::smatch m;
    REQUIRE(std::regex_match(l, m, line));
    const long long us = std::stoll(m[1]), ms = std::stoll(m[2]);
    CHECK(us >= 3000);      // only the slow calls
    CHECK(ms >= 1);
    CHECK(ms <= 5);
    CHECK(us >= ms * 1000);  // a sleep of ms milliseconds never takes less: the argument belongs to the call
    logged++;
  }
  CHECK(logged > 0);
  CHECK(zoo.alive());
}
