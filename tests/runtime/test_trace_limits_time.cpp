// trace -n (stop after N calls, as break -n), the wall-clock time of each
// call (text: microseconds; JSON: "time", RFC 3339 with nanoseconds, beside
// the monotonic ts_ns), and elapsed_ms on every interval object of count and
// latency (issue #17).
#include <doctest/doctest.h>

#include <time.h>

#include <boost/json.hpp>

#include <regex>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;

namespace {

int64_t realtimeNs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// "2026-11-24T20:31:05.123456789Z" -> ns since the epoch; -1 when it is not that form.
int64_t parseRfc3339Nanos(const std::string& s) {
  static const std::regex form(R"((\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{9})Z)");
  std::smatch m;
  if (!std::regex_match(s, m, form)) return -1;
  tm parts{};
  parts.tm_year = std::stoi(m[1]) - 1900;
  parts.tm_mon = std::stoi(m[2]) - 1;
  parts.tm_mday = std::stoi(m[3]);
  parts.tm_hour = std::stoi(m[4]);
  parts.tm_min = std::stoi(m[5]);
  parts.tm_sec = std::stoi(m[6]);
  return static_cast<int64_t>(timegm(&parts)) * 1'000'000'000 + std::stoll(m[7]);
}

}  // namespace

TEST_CASE("trace -n N: exactly N calls printed, text and JSON, then detached with exit 0") {
  Counter c;  // main.doWork runs millions of times a second
  const double before = c.rate();
  for (const std::string json : {"", " --json"}) {
    CAPTURE(json);
    auto r = runCli("trace -n 7" + json + " -p " + std::to_string(c.pid()) + " main.doWork");
    INFO(r.err);
    CHECK(r.exitCode == 0);
    // (--json: the stream's last object is its session_cost)
    const auto lines = json.empty() ? splitLines(r.out) : callLines(r.out);
    CHECK(lines.size() == 7);
    for (const auto& l : lines) {
      const bool call = l.find("main.doWork(") != std::string::npos || l.find("\"main.doWork\"") != std::string::npos;
      CHECK(call);
    }
    if (!json.empty()) CHECK(callObjects(r.out).size() == 7);
    CHECK(r.err.find("goscope: hit count reached") != std::string::npos);
  }
  // On a -c command too: the session ends at the Nth call, not with the program.
  auto l = runCli("trace -n 2 -c '" + fixture("functions") + " --repeat 5' main.add");
  REQUIRE_MESSAGE(l.exitCode == 0, l.err);
  size_t calls = 0;  // the command's own lines ("ready", "add(42, 13) = 55") share stdout
  for (const auto& line : splitLines(l.out)) calls += line.find(" pid=") != std::string::npos;
  CHECK(calls == 2);
  checkUnharmed(c, before);  // the probes came off: the counter runs at full speed again
  // On the Delve path too (a breakpoint per call; -n is its hit count).
  Child zoo({fixture("zoo"), "--sleep-ms", "10"});
  std::this_thread::sleep_for(500ms);
  auto d = runCli("trace -n 2 --strategy delve --json -p " + std::to_string(zoo.pid()) + " main.greet");
  REQUIRE_MESSAGE(d.exitCode == 0, d.err);
  auto delveCalls = callObjects(d.out);
  REQUIRE(delveCalls.size() == 2);
  for (auto& o : delveCalls) CHECK(o["args"].as_object().at("name") == "gopher");
  CHECK(waitUntraced(zoo.pid(), 10s));
  CHECK(zoo.alive());
}

TEST_CASE("trace: each call's wall-clock time, microseconds in text, RFC 3339 nanoseconds in JSON beside ts_ns") {
  const int64_t t0 = realtimeNs();
  auto r = runCli("trace --json -c '" + fixture("functions") + " --repeat 3' main.add");
  const int64_t t1 = realtimeNs();
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  auto calls = callObjects(r.out);
  REQUIRE(calls.size() == 3);
  std::vector<int64_t> wall, mono;
  for (auto& o : calls) {
    REQUIRE(o.contains("time"));
    REQUIRE(o.contains("ts_ns"));  // the monotonic stamp stays
    const std::string time(o["time"].as_string());
    CAPTURE(time);
    const int64_t ns = parseRfc3339Nanos(time);
    REQUIRE(ns > 0);
    CHECK(ns >= t0);  // within the run, by the wall clock
    CHECK(ns <= t1);
    wall.push_back(ns);
    mono.push_back(o["ts_ns"].to_number<int64_t>());
  }
  // One offset for the session: wall-clock gaps are the monotonic gaps, to the nanosecond.
  for (size_t i = 1; i < wall.size(); i++) CHECK(wall[i] - wall[0] == mono[i] - mono[0]);

  auto text = runCli("trace -c '" + fixture("functions") + " --repeat 2' main.add");
  REQUIRE_MESSAGE(text.exitCode == 0, text.err);
  std::vector<std::string> lines;  // the command's own lines share stdout
  for (const auto& line : splitLines(text.out))
    if (line.find(" pid=") != std::string::npos) lines.push_back(line);
  REQUIRE(lines.size() == 2);
  for (const auto& line : lines) {
    CAPTURE(line);
    CHECK(std::regex_search(line, std::regex(R"(^\d\d:\d\d:\d\d\.\d{6} pid=\d+ goid=1 main\.add\(x=42, y=13\) = 55)")));
  }
}

TEST_CASE("count and latency: every interval JSON object carries elapsed_ms") {
  Counter c;
  const std::string p = " -p " + std::to_string(c.pid()) + " ";
  auto count = runCli("count --json -i 0.3 -d 1.2" + p + "main.doWork --read main.counter");
  REQUIRE_MESSAGE(count.exitCode == 0, count.err);
  auto latency = runCli("latency --json -i 0.3 -d 1.2" + p + "main.doWork");
  REQUIRE_MESSAGE(latency.exitCode == 0, latency.err);
  for (const auto* out : {&count.out, &latency.out}) {
    int64_t last = -1;
    size_t intervals = 0;
    for (auto& o : jsonObjects(*out)) {
      if (isSessionNote(o)) continue;  // their own elapsed_ms, inside
      if (o.contains("final") && o.contains("count") && !o.contains("buckets")) continue;  // count's totals: no interval
      CAPTURE(boost::json::serialize(o));
      REQUIRE(o.contains("elapsed_ms"));
      const int64_t ms = o["elapsed_ms"].to_number<int64_t>();
      CHECK(ms >= last);  // in order
      CHECK(ms > 0);
      CHECK(ms < 5000);
      last = ms;
      intervals++;
    }
    CHECK(intervals >= 3);  // -i 0.3 over 1.2 s
  }
}

// break -n used to divide its hits by a session that is mostly set-up: 3
// hits of a function called ~98,000 times a second read "220 hits/s".
TEST_CASE("break -n: the rate it reports is the function's, not the set-up's") {
  Counter c;  // main.doWork: thousands of calls a second at least
  const std::string p = " -p " + std::to_string(c.pid()) + " ";
  auto rateIn = [](const std::string& err, const std::string& how) {
    std::smatch m;
    const std::regex line(R"((\d+) hits in \d+\.\d\d s \((\d+\.\d) hits/s )" + how + R"(\); hit count reached)");
    return std::regex_search(err, m, line) ? std::stod(m[2]) : -1.0;
  };
  // Few hits: the rate the plan measured in the kernel just before.
  auto few = runCli("break -n 3" + p + "main.doWork");
  REQUIRE_MESSAGE(few.exitCode == 0, few.err);
  const double measured = rateIn(few.err, "measured in the kernel before the session");
  CHECK_MESSAGE(measured > 1000, few.err);
  // Enough hits: between the first and the last, by their own time stamps (BPF: the target runs on).
  auto many = runCli("break -n 200 --strategy bpf" + p + "main.doWork");
  REQUIRE_MESSAGE(many.exitCode == 0, many.err);
  const double between = rateIn(many.err, "between the first hit and the last");
  CHECK_MESSAGE(between > 1000, many.err);
}
