// The counter fixture in --burst mode (fixtures/go/counter): it calls
// main.doWork exactly n times per burst() and says its own count after
// each, so a tool's count can be compared with the program's own.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "support/run.hpp"

namespace goscope::test {

class BurstCounter {
 public:
  explicit BurstCounter(int n) : child_({fixture("counter"), "--burst", std::to_string(n)}, true) {
    std::string line;
    REQUIRE(child_.readLine(line, 10000));
    REQUIRE(line == "ready");
  }
  pid_t pid() const { return child_.pid(); }
  Child& child() { return child_; }
  // main.counter after one more burst.
  long long burst() {
    ::kill(child_.pid(), SIGUSR1);
    std::string line;
    REQUIRE(child_.readLine(line, 30000));
    REQUIRE(line.rfind("burst: counter=", 0) == 0);
    return std::stoll(line.substr(line.find('=') + 1));
  }

 private:
  Child child_;
};

}  // namespace goscope::test
