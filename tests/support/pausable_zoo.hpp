// The zoo fixture run by a test that needs its exact counts at chosen
// moments: zoo's text status lines parsed, and its pause between rounds
// (SIGUSR1 ... SIGUSR2, fixtures/go/zoo/pause.go), at which the status line
// is the exact count of every call so far and no counted call is in flight.
// Header-only; include it from doctest test files.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "support/run.hpp"
#include "binary/elf_file.hpp"

namespace goscope::test {

// "zoo: ok rounds=N calls main.add=N ..." or "zoo: FAIL <why> (rounds=N)".
struct ZooStatus {
  bool ok = false;
  std::string failure;
  int64_t rounds = -1;
  std::map<std::string, int64_t> calls;
};

inline std::optional<ZooStatus> parseZooStatus(const std::string& line) {
  ZooStatus s;
  if (line.rfind("zoo: FAIL ", 0) == 0) {
    s.failure = line.substr(10);
    return s;
  }
  if (line.rfind("zoo: ok rounds=", 0) != 0) return std::nullopt;
  std::istringstream in(line.substr(15));
  std::string word;
  in >> s.rounds >> word;
  if (word != "calls") return std::nullopt;
  while (in >> word) {
    auto eq = word.rfind('=');  // names have no '=' (main.Map[go.shape.int_0,...] has none)
    if (eq == std::string::npos) return std::nullopt;
    s.calls[word.substr(0, eq)] = std::stoll(word.substr(eq + 1));
  }
  s.ok = true;
  return s;
}

class PausableZoo {
 public:
  explicit PausableZoo(const std::string& variant = "default")
      : binary_(fixture("zoo", variant)), child_({binary_}, /*captureStdout=*/true) {
    auto e = ElfFile::open(binary_);
    REQUIRE_MESSAGE(e.has_value(), "build the fixtures first: scripts/build-fixtures.sh BUILD/fixtures");
    elf_ = *e;
    std::string ready;
    REQUIRE(child_.readLine(ready, 5000));
    REQUIRE(ready == "ready");
  }
  pid_t pid() const { return child_.pid(); }
  const std::string& binary() const { return binary_; }
  const ElfFile& elf() const { return *elf_; }
  Child& child() { return child_; }
  const ZooStatus& last() const { return last_; }
  size_t statusLines() const { return statusLines_; }
  const std::string& firstBadLine() const { return bad_; }

  // Reads the lines zoo printed, for up to timeoutMs for the first one;
  // remembers the last status. False if a line was not an ok status.
  bool drain(int timeoutMs = 0) {
    std::string line;
    bool good = true;
    for (int wait = timeoutMs; child_.readLine(line, wait); wait = 0) good = take(line) && good;
    return good;
  }

  // Pauses zoo between rounds and returns the status printed there.
  ZooStatus pause() {
    REQUIRE(::kill(pid(), SIGUSR1) == 0);
    std::string line;
    for (;;) {
      REQUIRE_MESSAGE(child_.readLine(line, 60'000), "zoo did not pause within 60 s");
      if (line.rfind("zoo: paused rounds=", 0) == 0) {
        REQUIRE(std::stoll(line.substr(19)) == last_.rounds);
        return last_;
      }
      CHECK_MESSAGE(take(line), line);
    }
  }
  void resume() { REQUIRE(::kill(pid(), SIGUSR2) == 0); }

 private:
  bool take(const std::string& line) {
    auto s = parseZooStatus(line);
    if (!s || !s->ok) {
      if (bad_.empty()) bad_ = line;
      return false;
    }
    last_ = *s;
    statusLines_++;
    return true;
  }

  std::string binary_;
  Child child_;
  std::shared_ptr<ElfFile> elf_;
  ZooStatus last_;
  size_t statusLines_ = 0;
  std::string bad_;
};

}  // namespace goscope::test
