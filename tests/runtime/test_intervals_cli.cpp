// Interval reports as bcc prints them (issue #17): count -i gives each
// interval's own calls, most called first, under a stamped header, cut by
// --top; latency -i gives each interval's own histogram (-m/-u units);
// trace --folded -i prints each interval's new stack counts. Every interval
// object carries elapsed_ms and interval_ms. The counter fixture in --burst
// mode calls main.doWork exactly 1,000 times a burst, so the intervals must
// add up to the program's own count.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>
#include <thread>

#include "support/burst_counter.hpp"
#include "support/goscope_process.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

constexpr int kPerBurst = 1000, kBursts = 3;

// Runs goscope ARGS (-p is added) against a bursting counter: once the
// probes are attached, three bursts 0.45 s apart, then at least one more
// interval, then Ctrl-C. Returns stdout's lines and checks the program's own
// count.
std::vector<std::string> runAcrossBursts(std::vector<std::string> args) {
  BurstCounter counter(kPerBurst);
  args.push_back("-p");
  args.push_back(std::to_string(counter.pid()));
  std::vector<std::string> lines;
  GoscopeProcess g(args, [&](const std::string& l) { lines.push_back(l); });
  REQUIRE_MESSAGE(waitUntil([&] { return g.err().find("attached") != std::string::npos || !g.running(); }, 30s), g.err());
  REQUIRE_MESSAGE(g.running(), g.err());
  long long own = 0;
  for (int i = 0; i < kBursts; i++) {
    own = counter.burst();
    std::this_thread::sleep_for(450ms);
    g.pump();
  }
  CHECK(own == kPerBurst * kBursts);
  std::this_thread::sleep_for(700ms);  // an interval report after the last burst
  g.signal(SIGINT);
  int status = g.wait(30s);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), g.err());
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace

TEST_CASE("intervals: count -i gives each interval's own calls, adding up to the program's count") {
  const auto objects = callObjects(joined(runAcrossBursts({"count", "--json", "-i", "0.3", "main.doWork"})));
  uint64_t sumDeltas = 0, lastCount = 0, finalCount = 0;
  int busy = 0;
  for (const auto& o : objects) {
    if (o.contains("final")) {
      finalCount = o.at("count").to_number<uint64_t>();
      continue;
    }
    REQUIRE(o.contains("delta"));
    CHECK(o.at("elapsed_ms").as_int64() > 0);
    const auto intervalMs = o.at("interval_ms").as_int64();
    CHECK(intervalMs > 0);
    CHECK(intervalMs < 1000);
    const auto delta = o.at("delta").to_number<uint64_t>(), count = o.at("count").to_number<uint64_t>();
    CHECK(count == lastCount + delta);  // the delta is this interval's, the count the running total
    lastCount = count;
    sumDeltas += delta;
    busy += delta > 0;
  }
  CHECK(busy >= 2);  // the bursts fell in different intervals
  CHECK(sumDeltas == kPerBurst * kBursts);
  CHECK(finalCount == kPerBurst * kBursts);
}

TEST_CASE("intervals: count -i --top N shows the N most called first and says how many it left out") {
  // Text: "[HH:MM:SS] 0.30 s", the column header, the rows by CALLS, then the cut.
  const auto lines = runAcrossBursts({"count", "-i", "0.3", "--top", "2", "main.*", "runtime.*"});
  // A report read late on a loaded machine says so after its length.
  const std::regex header(R"(\[\d\d:\d\d:\d\d\] \d+\.\d\d s( \(.* late.*\))?)"), row(R"((\S+) +(\d+) +(\d+)/s +(\d+))");
  int intervals = 0, cuts = 0;
  bool sawDoWork = false;
  for (size_t i = 0; i < lines.size(); i++) {
    if (lines[i].empty() || lines[i].rfind("FUNC ", 0) == 0) continue;
    if (!std::regex_match(lines[i], header)) continue;
    intervals++;
    REQUIRE(i + 1 < lines.size());
    CHECK(lines[i + 1].find("CALLS") != std::string::npos);
    std::vector<uint64_t> calls;
    size_t j = i + 2;
    for (std::smatch m; j < lines.size() && std::regex_match(lines[j], m, row); j++) {
      calls.push_back(std::stoull(m[2]));
      sawDoWork |= m[1] == "main.doWork" && std::stoull(m[2]) == kPerBurst;
    }
    CHECK(calls.size() <= 2);
    CHECK(std::is_sorted(calls.rbegin(), calls.rend()));  // most called first
    if (j < lines.size() && lines[j].find("more function") != std::string::npos) cuts++;
  }
  CHECK(intervals >= 3);
  CHECK(cuts >= 1);      // the runtime's functions beyond the top 2
  CHECK(sawDoWork);      // a burst interval: main.doWork's 1,000 calls at the top
}

TEST_CASE("intervals: latency -i gives each interval's own histogram, the final object the session's") {
  const auto objects = callObjects(joined(runAcrossBursts({"latency", "--json", "-i", "0.3", "main.doWork"})));
  uint64_t sum = 0, finalCount = 0;
  int busy = 0;
  for (const auto& o : objects) {
    uint64_t bucketSum = 0;
    for (const auto& b : o.at("buckets").as_array()) bucketSum += b.at("count").to_number<uint64_t>();
    const auto count = o.at("count").to_number<uint64_t>();
    CHECK(bucketSum == count);  // the histogram is the same interval's as the count
    if (o.contains("final")) {
      finalCount = count;
      CHECK(!o.contains("interval_ms"));
      continue;
    }
    CHECK(o.at("interval_ms").as_int64() > 0);
    CHECK(count <= kPerBurst);  // one burst at most: an interval's own, not the running total
    sum += count;
    busy += count > 0;
  }
  CHECK(busy >= 2);
  CHECK(sum == kPerBurst * kBursts);
  CHECK(finalCount == kPerBurst * kBursts);
}

TEST_CASE("intervals: latency -u and -m print the histogram in usecs and msecs") {
  // zoo's sleepWork sleeps 1 to 6 ms: in usecs its busy buckets start at 512 or
  // more, in msecs below 1000 (no call sleeps a second).
  for (const auto& [flag, unit] : {std::pair{"-u", "usecs"}, std::pair{"-m", "msecs"}}) {
    CAPTURE(flag);
    auto r = runCli(std::string("latency ") + flag + " -c '" + fixture("zoo") + " --rounds 1' main.sleepWork");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(r.out.find(std::string(unit) + " : count") != std::string::npos);
    const std::regex bucket(R"( *(\d+) -> (\d+) +: (\d+) .*)");
    uint64_t busiestLow = 0, calls = 0;
    for (const auto& l : splitLines(r.out))
      if (std::smatch m; std::regex_match(l, m, bucket) && std::stoull(m[3]) > 0) {
        busiestLow = std::max<uint64_t>(busiestLow, std::stoull(m[1]));
        calls += std::stoull(m[3]);
      }
    CHECK(calls > 0);
    if (std::string(flag) == "-u") CHECK(busiestLow >= 512);
    else CHECK(busiestLow < 1000);
  }
}

TEST_CASE("intervals: trace --folded -i prints each interval's new stacks, adding up to the program's count") {
  const auto objects = callObjects(joined(runAcrossBursts({"trace", "--folded", "--json", "-i", "0.3", "main.doWork"})));
  uint64_t total = 0;
  std::set<int64_t> reports;
  for (const auto& o : objects) {
    REQUIRE(o.contains("stack"));
    CHECK(o.at("stack").as_array().back().as_string() == "main.doWork");
    total += o.at("count").to_number<uint64_t>();
    reports.insert(o.at("elapsed_ms").as_int64());
    CHECK(o.at("interval_ms").as_int64() > 0);
  }
  CHECK(reports.size() >= 2);
  CHECK(total == kPerBurst * kBursts);
}
