// trace's reading side at a high rate: a burst of calls as fast as uprobes
// let them through, every one delivered as a whole JSON line, none lost with
// the ring sized from --expect-rate (said with -v), and what reading a call
// cost goscope beside a reference measured in the same run: this process
// parsing and writing again the very lines goscope wrote. Both are CPU time,
// not wall time (a loaded machine delays a process but does not make its
// work bigger), and only their ratio is asserted: a shared machine makes
// every CPU second dearer for both. bench/trace_throughput.sh measures the
// figures against bpftrace.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/cpu_hogs.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

double threadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The reference: each line parsed into a JSON value, serialized again and
// written to a file, in CPU seconds a line. Work of goscope's kind (a
// record decoded, formatted and written) on the same CPUs at the same time.
double referenceSecondsPerLine(const std::vector<std::string>& lines) {
  char path[] = "/tmp/goscope-throughput-ref.XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return -1;
  FILE* f = ::fdopen(fd, "w");
  const double t0 = threadCpuSeconds();
  for (const auto& l : lines) {
    const std::string again = boost::json::serialize(boost::json::parse(l));
    std::fwrite(again.data(), 1, again.size(), f);
    std::fputc('\n', f);
  }
  std::fflush(f);
  const double spent = threadCpuSeconds() - t0;
  std::fclose(f);
  ::unlink(path);
  return lines.empty() ? -1 : spent / static_cast<double>(lines.size());
}

}  // namespace

TEST_CASE("trace throughput: a burst of 50,000 calls, every one a whole JSON line, none lost, goscope's CPU a call within 6x a reference of its kind") {
  constexpr long kCalls = 50000;
  Child counter({fixture("counter"), "--burst", std::to_string(kCalls)}, true);
  std::string line;
  REQUIRE(counter.readLine(line, 10000));
  REQUIRE(line == "ready");

  char outPath[] = "/tmp/goscope-throughput-out.XXXXXX", errPath[] = "/tmp/goscope-throughput-err.XXXXXX";
  const int out = mkstemp(outPath), err = mkstemp(errPath);
  REQUIRE(out >= 0);
  REQUIRE(err >= 0);
  // --expect-rate: the ring holds half a second of 100,000 calls a second
  // (32 MB), more than the whole burst, so even a goscope that gets no CPU
  // until the burst is over loses nothing.
  const pid_t g = spawnCli({"-v", "trace", "--json", "--strategy", "bpf", "--expect-rate", "100000", "-n",
                            std::to_string(kCalls), "-p", std::to_string(counter.pid()), "main.doWork"},
                           out, err);
  REQUIRE(g > 0);
  const bool attached = waitUntil([&] { return slurpFile(errPath).find(" attached to ") != std::string::npos; }, 60s);
  const double cpuAttached = cpuSeconds(g);
  if (attached) ::kill(counter.pid(), SIGUSR1);
  int status = 0;
  rusage ru{};
  bool exited = false;
  waitUntil([&] { return exited = ::wait4(g, &status, WNOHANG, &ru) == g; }, attached ? 120s : 1s);
  if (!exited) {
    ::kill(g, SIGKILL);
    ::wait4(g, &status, 0, &ru);
  }
  const std::string stdoutText = slurpFile(outPath), stderrText = slurpFile(errPath);
  ::close(out);
  ::close(err);
  ::unlink(outPath);
  ::unlink(errPath);
  INFO("stderr: " << stderrText);
  REQUIRE(attached);
  REQUIRE(exited);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  // Every call a whole line that parses, in order, each its own object.
  const auto calls = callObjects(stdoutText);
  CHECK(calls.size() == static_cast<size_t>(kCalls));
  size_t whole = 0;
  for (const auto& l : splitLines(stdoutText)) whole += l.starts_with("{\"func\":\"main.doWork\",") && l.ends_with("}");
  CHECK(whole == static_cast<size_t>(kCalls));
  CHECK(stderrText.find("events lost") == std::string::npos);
  CHECK(stderrText.find("event ring buffer 32 MB for 100000 calls/s") != std::string::npos);

  // The session's CPU (attach to exit: every event read, decoded and
  // written, and the detach), per call (two events, one line), against the
  // reference per line. A reader that does only that work, plus the
  // wake-ups and writes the reference does not make, costs a few times the
  // reference; one that does more per event (a /proc look on every ring
  // wake-up, say) costs ten times it and more (bench/README.md has the
  // figures).
  const double total = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  REQUIRE(cpuAttached >= 0);
  const double perCallUs = (total - cpuAttached) / static_cast<double>(kCalls) * 1e6;
  const double referenceUs = referenceSecondsPerLine(splitLines(stdoutText)) * 1e6;
  REQUIRE(referenceUs > 0);
  MESSAGE("goscope CPU: " << total << " s in all, " << total - cpuAttached << " s after the attach: " << perCallUs
                          << " us a call; the reference: " << referenceUs << " us a line; ratio " << perCallUs / referenceUs
                          << "; load " << loadAverage());
  CHECK(perCallUs < 6 * referenceUs);
}
