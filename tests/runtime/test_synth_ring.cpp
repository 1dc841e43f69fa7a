// trace's reading path keeps exact accounts at any rate (issue #14 goal 6):
// every record written into the session's ring is printed or counted lost.
// The records come from bench/synth_ring, the in-kernel synthetic producer
// of bench/trace_throughput.sh SYNTH=1 (a BPF_PROG_TYPE_SYSCALL program run
// by BPF_PROG_TEST_RUN: docs/kernel.md, "A synthetic producer"): copies of a
// real call of main.add that the session had read, RAX set to 4242 so that
// they can be told from the target's own calls, written into goscope's ring
// and, when the ring is full, counted in goscope's own lost counter as the
// uprobe program does. goscope is stopped (SIGSTOP) for the producer's first
// 100,000 calls, so the ring certainly fills and both paths are taken; then
// it reads while the producer writes. The target is stopped meanwhile, so no
// call of its own is lost or printed among them. No speed is asserted
// (bench/trace_throughput.sh SYNTH=1 measures it).
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/run.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

// synth_ring's "synth_ring: key=value ..." line, by key.
std::map<std::string, std::string> keyValues(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  for (std::string word; in >> word;)
    if (auto eq = word.find('='); eq != std::string::npos) kv[word.substr(0, eq)] = word.substr(eq + 1);
  return kv;
}

unsigned long long numberOf(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  REQUIRE_MESSAGE(it != kv.end(), "synth_ring printed no " << key);
  return std::strtoull(it->second.c_str(), nullptr, 10);
}

// goscope's "goscope: N events lost (...)" line; 0 without one.
unsigned long long eventsLost(const std::string& err) {
  auto at = err.find(" events lost (");
  if (at == std::string::npos) return 0;
  auto start = err.rfind("goscope: ", at);
  REQUIRE(start != std::string::npos);
  return std::strtoull(err.c_str() + start + 9, nullptr, 10);
}

}  // namespace

TEST_CASE("synth ring: every record written into trace's ring is printed or counted lost, exactly") {
  char dir[] = "/tmp/goscope-synth-ring.XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string tools = dir;
  struct Cleanup {
    std::string d;
    ~Cleanup() { run("rm -rf -- '" + d + "'"); }
  } cleanup{tools};
  // Built as the bench builds it, against this build's vmlinux.h.
  auto built = run("bash '" + sourceDir() + "/bench/synth_ring_build.sh' '" + tools + "' '" + fixtureDir() +
                   "/../bpf/vmlinux.h' 2>&1");
  REQUIRE_MESSAGE(built.exitCode == 0, built.out);

  Child target({fixture("functions"), "--loop"}, true);  // main.add(42, 13) every 100 ms
  std::string line;
  REQUIRE(target.readLine(line, 10000));
  REQUIRE(line == "ready");

  constexpr long long kMark = 4242, kPairs = 400000;
  long long marked = 0, markedArgs = 0, real = 0;
  // --expect-rate 10: the smallest ring (4 MB, ~25,000 records), which the
  // producer fills in a few milliseconds while goscope is stopped.
  GoscopeProcess g({"trace", "--json", "--strategy", "bpf", "--expect-rate", "10", "-p", std::to_string(target.pid()),
                    "main.add"},
                   [&](const std::string& l) {
                     if (l.find("\"func\":\"main.add\"") == std::string::npos) return;
                     if (l.find("\"results\":[4242]") != std::string::npos) marked++;
                     else real++;
                     if (l.find("\"args\":{\"x\":4242,") != std::string::npos) markedArgs++;
                   });
  // A real call read by goscope: the records the producer copies.
  const bool seen = waitUntil(
      [&] {
        g.pump();
        return real > 0 || !g.running();
      },
      60s);
  INFO("goscope's stderr: " << g.err());
  REQUIRE(seen);
  REQUIRE(g.running());

  // Neither the target nor goscope runs while the producer starts.
  REQUIRE(::kill(target.pid(), SIGSTOP) == 0);
  g.signal(SIGSTOP);
  CommandResult synth;
  std::atomic<bool> produced{false};
  // goscope continues (SIGCONT from the producer itself) once 100,000 calls
  // were offered: 200,000 records, 8 rings' worth, met a stopped reader.
  std::thread producer([&] {
    synth = run("'" + tools + "/synth_ring' --reader " + std::to_string(g.pid()) + " --pairs " +
                std::to_string(kPairs) + " --cont-reader-after 100000 --secs 60 --wait 10 --mark " +
                std::to_string(kMark));
    produced = true;
  });
  while (!produced) {  // goscope's stdout read as it goes (a pipe), until the producer is done
    g.pump();
    std::this_thread::sleep_for(5ms);
  }
  producer.join();
  INFO("synth_ring: " << synth.out << synth.err);
  g.signal(SIGCONT);  // in case synth_ring failed before its SIGCONT
  REQUIRE(synth.exitCode == 0);
  // Everything written is in the ring, or printed: then the session ends.
  std::this_thread::sleep_for(500ms);
  g.signal(SIGINT);
  const int status = g.wait(60s);
  REQUIRE(status != -1);
  CHECK(g.exitedCleanly());
  ::kill(target.pid(), SIGCONT);

  const auto kv = keyValues(synth.out);
  const unsigned long long written = numberOf(kv, "written"), refused = numberOf(kv, "refused");
  const unsigned long long returns = numberOf(kv, "returns_written"), entries = numberOf(kv, "entries_written");
  CHECK(written + refused == 2 * kPairs);
  // goscope was stopped while 200,000 records met a 4 MB ring (~25,000): full.
  CHECK(refused >= 150000);
  CHECK(written > 0);
  // Exact: each return written is a printed call (its entry printed in it,
  // or lost: then the line has no arguments), each record refused is in
  // goscope's "events lost".
  CHECK(static_cast<unsigned long long>(marked) == returns);
  CHECK(eventsLost(g.err()) == refused);
  CHECK(static_cast<unsigned long long>(markedArgs) <= entries);
  MESSAGE("synth_ring wrote " << written << " records (" << entries << " entries, " << returns << " returns) and had "
                              << refused << " refused; goscope printed " << marked << " of its calls ("
                              << markedArgs << " with their entry's arguments) and counted " << eventsLost(g.err())
                              << " events lost; " << real << " calls of the target's own");
}
