// goscope sample without --at (session/memory_sample.hpp): once an interval,
// every expression read from the process's memory; the target is never
// stopped, never traced. What it cannot read that way is refused before the
// first sample, naming --at.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <regex>
#include <thread>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {
bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }
}  // namespace

TEST_CASE("sample without --at: the counter read from memory each interval, never stopped") {
  Counter c;
  const double before = c.rate();
  const std::string p = " -p " + std::to_string(c.pid()) + " ";
  // Watch the target from outside while it is sampled: never traced, never stopped.
  std::atomic<bool> done{false}, traced{false}, stopped{false};
  std::thread watch([&] {
    while (!done) {
      traced = traced || tracerPid(c.pid()) != 0;
      const char s = procState(c.pid());
      stopped = stopped || s == 'T' || s == 't';
      std::this_thread::sleep_for(2ms);
    }
  });
  auto j = runCli("sample --json" + p + "main.counter -i 0.3 -d 1");
  auto t = runCli("sample" + p + "main.counter 'len(main.counter)' -i 0.2 -d 0.3");  // refused: len of an int64
  auto text = runCli("sample" + p + "main.counter -i 0.2 -d 0.3");
  done = true;
  watch.join();
  INFO("json stderr: " << j.err);
  REQUIRE(j.exitCode == 0);
  // Samples at 0, 0.3, 0.6 and 0.9 s: the count is the loop's, not the clock's.
  auto recs = callObjects(j.out);
  REQUIRE(recs.size() == 4);
  int64_t last = -1;
  for (size_t i = 0; i < recs.size(); i++) {
    const auto& o = recs[i];
    CHECK(o.at("sample") == static_cast<int64_t>(i + 1));
    CHECK(o.at("miss") == false);
    CHECK(o.at("pause_ms").to_number<double>() == 0.0);
    CHECK_FALSE(o.contains("function"));
    const int64_t v = o.at("values").at("main.counter").to_number<int64_t>();
    CHECK(v > last);  // the counter runs between samples
    last = v;
  }
  CHECK(has(j.err, "4 samples read from memory"));
  CHECK(has(j.err, "was never stopped"));
  CHECK_FALSE(traced.load());
  CHECK_FALSE(stopped.load());
  INFO("text stderr: " << text.err);
  REQUIRE(text.exitCode == 0);
  const auto lines = splitLines(text.out);
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) CHECK(std::regex_match(l, std::regex(R"(\d\d:\d\d:\d\d\.\d{3} \| main\.counter=\d+ \| not stopped)")));
  INFO("len stderr: " << t.err);
  CHECK(t.exitCode == 2);
  CHECK(t.out.empty());
  CHECK(has(t.err, "sample: without --at, sample reads from memory, and len(main.counter): len of a int64: Delve evaluates it"));
  CHECK(has(t.err, "--at FUNC"));
  checkUnharmed(c, before);
}

TEST_CASE("sample without --at: what memory alone cannot answer is refused, naming --at") {
  Counter c;
  const std::string p = " -p " + std::to_string(c.pid()) + " ";
  auto args = runCli("sample" + p + "--args -d 1");
  CHECK(args.exitCode == 2);
  CHECK(has(args.err, "--args are a call's: name the function with --at FUNC"));
  auto timeout = runCli("sample" + p + "main.counter --timeout 1 -d 1");
  CHECK(timeout.exitCode == 2);
  CHECK(has(timeout.err, "--timeout is how long to wait for FUNC's call"));
  auto delve = runCli("sample --strategy delve" + p + "main.counter -d 1");
  CHECK(delve.exitCode == 2);
  CHECK(has(delve.err, "without --at, sample reads from memory: --strategy delve does not fit"));
  auto none = runCli("sample" + p + "-d 1");
  CHECK(none.exitCode == 2);
  CHECK(has(none.err, "name at least one expression (e.g. main.counter), or --at FUNC"));
  auto unknown = runCli("sample" + p + "main.nosuch -d 1");
  CHECK(unknown.exitCode == 5);
  CHECK(has(unknown.err, "sample: "));
  CHECK(dlvAttachedTo(c.pid()).empty());
  CHECK(alive(c.pid()));
}

TEST_CASE("sample without --at: a target someone else stopped is read, said to be in its stop, and left in it") {
  Counter c;
  const double before = c.rate();
  REQUIRE(::kill(c.pid(), SIGSTOP) == 0);
  for (int i = 0; i < 500 && procState(c.pid()) != 'T'; i++) std::this_thread::sleep_for(2ms);
  REQUIRE(procState(c.pid()) == 'T');
  auto j = runCli("sample --json -p " + std::to_string(c.pid()) + " main.counter -i 0.2 -d 0.5");
  const char after = procState(c.pid());
  ::kill(c.pid(), SIGCONT);
  INFO("stderr: " << j.err);
  REQUIRE(j.exitCode == 0);
  auto recs = callObjects(j.out);
  REQUIRE(recs.size() == 3);
  // Stopped: every sample reads the same value.
  for (const auto& o : recs) CHECK(o.at("values").at("main.counter") == recs[0].at("values").at("main.counter"));
  CHECK(has(j.err, "was never stopped by goscope (it is in a stop of its own, state T, left so"));
  CHECK(after == 'T');
  checkUnharmed(c, before);
}
