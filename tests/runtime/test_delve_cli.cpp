// goscope read, sample, break and set with the real dlv 1.20.2 on the
// counter and zoo fixtures. Every test ends with the fixture unharmed: alive,
// no dlv or tracer left, its whole .text equal to the file (no int3), back
// at speed (tests/support/unharmed.hpp). goscope is also SIGKILLed in the
// middle of a break session, in each state a session can be in.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::string pidArg(pid_t pid) { return " -p " + std::to_string(pid) + " "; }

std::string lastLine(const std::string& s) {
  auto lines = splitLines(s);
  return lines.empty() ? "" : lines.back();
}

// An error: exit code, the message on stderr's last line, nothing on stdout
// unless something was recorded first.
void expectError(const CommandResult& r, int code, const std::string& needle, bool stdoutEmpty = true) {
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == code);
  if (stdoutEmpty) CHECK(r.out.empty());
  std::string line = lastLine(r.err);
  CHECK(line.rfind("goscope: ", 0) == 0);
  CHECK(line.find(needle) != std::string::npos);
}

// The zoo fixture, and the rounds per second its status lines show.
struct Zoo {
  Child child;
  std::shared_ptr<ElfFile> elf;

  Zoo() : child({fixture("zoo")}, /*captureStdout=*/true) {
    auto e = ElfFile::open(fixture("zoo"));
    REQUIRE(e.has_value());
    elf = *e;
    std::string ready;
    REQUIRE(child.readLine(ready, 5000));
    REQUIRE(ready == "ready");
  }
  pid_t pid() const { return child.pid(); }
  // rounds= of the next status line; -1 if none, or not ok.
  int64_t nextRounds(int timeoutMs = 5000) {
    std::string line;
    if (!child.readLine(line, timeoutMs) || line.rfind("zoo: ok rounds=", 0) != 0) return -1;
    return std::stoll(line.substr(15));
  }
  double roundsPerSecond() {
    std::string l;
    while (child.readLine(l, 5)) {
    }
    int64_t a = nextRounds();
    auto t0 = Clock::now();
    int64_t b = nextRounds();
    if (a < 0 || b < 0) return -1;
    return (b - a) / std::chrono::duration<double>(Clock::now() - t0).count();
  }
};

void checkZooUnharmed(Zoo& z, double roundsBefore) {
  REQUIRE(alive(z.pid()));
  CHECK_MESSAGE(waitUntraced(z.pid(), 20s), "a dlv is still attached to zoo");
  CHECK(textDifference(z.pid(), *z.elf) == 0);
  double after = z.roundsPerSecond();
  MESSAGE("zoo rounds/s before " << roundsBefore << ", after " << after);
  CHECK(after > 0.25 * roundsBefore);  // and its self-checks still pass ("zoo: ok")
}

// ---- goscope as a child whose stdout/stderr we control ----

// A pipe already full: whoever writes to its write end blocks, which stops
// goscope at a known point (e.g. printing a hit while the target sits at the
// breakpoint). The read end stays open so the writer blocks, not dies.
struct FullPipe {
  int r = -1, w = -1;
  FullPipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    r = fds[0];
    w = fds[1];
    ::fcntl(w, F_SETFL, O_NONBLOCK);
    char junk[4096] = {};
    while (::write(w, junk, sizeof junk) > 0) {
    }
    while (::write(w, junk, 1) > 0) {
    }
    ::fcntl(w, F_SETFL, 0);  // goscope's writes block
  }
  ~FullPipe() {
    ::close(r);
    ::close(w);
  }
};

// A private directory, removed when the test program exits.
std::string scratch() {
  struct Dir {
    std::string path = "/tmp/goscope-delve-cli-" + std::to_string(::getpid());
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir;
  return dir.path;
}

}  // namespace

// ---- read ---------------------------------------------------------------------

TEST_CASE("read --strategy delve: main.counter of a running counter lies between the reports around it") {
  Counter c;
  double before = c.rate();
  c.drainReports();
  int64_t n1 = c.nextReport();  // printed just now, before the read starts
  REQUIRE(n1 > 0);
  auto r = runCli("read --strategy delve" + pidArg(c.pid()) + "main.counter");
  c.drainReports();              // lines printed while goscope ran
  int64_t n2 = c.nextReport();  // printed after the read
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  std::smatch m;
  REQUIRE(std::regex_match(r.out, m, std::regex(R"(main\.counter = (\d+) \(int64\)\n)")));
  int64_t v = std::stoll(m[1]);
  MESSAGE("reports " << n1 << " < read " << v << " < " << n2);
  CHECK(n1 < v);
  CHECK(v < n2);
  // How long the target was stopped, on stderr.
  CHECK(std::regex_search(r.err, std::regex(R"(was stopped \d+\.\d ms; attach \d+ ms, detach \d+ ms, \d+ ms end to end)")));
  checkUnharmed(c, before);
}

TEST_CASE("read: zoo's globals as Go-like text and as JSON") {
  Zoo z;
  double before = z.roundsPerSecond();
  const std::string exprs = " main.cfg.Name 'len(main.items)' main.items main.labels main.primary main.cfg.Ratio";
  auto r = runCli("read" + pidArg(z.pid()) + exprs);
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  CHECK(r.out ==
        "main.cfg.Name = \"zoo\" (string)\n"
        "len(main.items) = 3 (int)\n"
        "main.items = []string{len=3 cap=3: \"alpha\", \"beta\", \"gamma\"} ([]string)\n"
        "main.labels = map[string]int{len=3: \"red\": 1, \"green\": 2, \"blue\": 3} (map[string]int)\n"
        "main.primary = &main.Server{Name: \"zoo\", Port: 8080} (*main.Server)\n"
        "main.cfg.Ratio = 0.75 (float64)\n");

  auto j = runCli("read --json" + pidArg(z.pid()) + exprs + " main.cfg");
  REQUIRE(j.exitCode == 0);
  auto objs = callObjects(j.out);
  REQUIRE(objs.size() == 7);
  for (const auto& o : objs) {
    CHECK(o.size() == 3);
    CHECK(o.contains("expr"));
    CHECK(o.contains("type"));
    CHECK(o.contains("value"));
  }
  CHECK(objs[0].at("expr") == "main.cfg.Name");
  CHECK(objs[0].at("value") == "zoo");
  CHECK(objs[1].at("value") == 3);
  CHECK(objs[1].at("type") == "int");
  CHECK(objs[2].at("value").at("elems") == boost::json::array{"alpha", "beta", "gamma"});
  CHECK(objs[2].at("value").at("len") == 3);
  CHECK(objs[3].at("value").at("green") == 2);
  CHECK(objs[4].at("value").at("value").at("Port") == 8080);  // a pointer: {"addr","value"}
  CHECK(objs[4].at("value").at("addr").as_string().starts_with("0xc"));
  CHECK(objs[5].at("value").as_double() == 0.75);
  CHECK(objs[6].at("type") == "main.Config");
  CHECK(objs[6].at("value").at("Tags").at("elems") == boost::json::array{"alpha", "beta"});
  checkZooUnharmed(z, before);
}

TEST_CASE("read: --max-string, --max-elements and --max-depth load as much on the direct read as on Delve's") {
  Zoo z;
  double before = z.roundsPerSecond();
  const std::string exprs = " main.items main.labels main.cfg";
  const std::string limits = " --max-string 2 --max-elements 1 --max-depth 0";
  auto direct = runCli("read" + limits + pidArg(z.pid()) + exprs);
  auto delve = runCli("read --strategy delve" + limits + pidArg(z.pid()) + exprs);
  INFO("direct: " << direct.err);
  INFO("delve: " << delve.err);
  REQUIRE(direct.exitCode == 0);
  REQUIRE(delve.exitCode == 0);
  CHECK(direct.err.find("was not stopped") != std::string::npos);
  CHECK(delve.err.find("was stopped") != std::string::npos);
  // Cut alike: 2 bytes of each string, 1 element, the map one level down not
  // loaded (zoo's SleepMs is its flag: 0 here).
  const std::string cut =
      "main.items = []string{len=3 cap=3: \"al…\"(+3 bytes), …} ([]string)\n"
      "main.labels = map[string]int{len=3: \"re…\"(+1 bytes): 1, …} (map[string]int)\n"
      "main.cfg = main.Config{Name: \"zo…\"(+1 bytes), Workers: 8, SleepMs: 0, Rounds: 0, Ratio: 0.75, Verbose: false, "
      "Tags: []string{len=2 cap=3: \"al…\"(+3 bytes), …}, Labels: map[string]int{len=3: …}} (main.Config)\n";
  CHECK(direct.out == cut);
  CHECK(delve.out == cut);
  // The defaults load all of it.
  auto whole = runCli("read" + pidArg(z.pid()) + " main.cfg.Labels");
  CHECK(whole.out == "main.cfg.Labels = map[string]int{len=3: \"red\": 1, \"green\": 2, \"blue\": 3} (map[string]int)\n");
  expectError(runCli("read --max-elements 0" + pidArg(z.pid()) + " main.items"), 2,
              "--max-elements wants a whole number from 1 to 100000, not '0'");
  expectError(runCli("read --max-depth 17" + pidArg(z.pid()) + " main.items"), 2, "--max-depth wants a whole number");
  expectError(runCli("read --max-string x" + pidArg(z.pid()) + " main.items"), 2, "--max-string wants a whole number");
  checkZooUnharmed(z, before);
}

// ---- sample -------------------------------------------------------------------

TEST_CASE("sample: --max-string, --max-elements and --max-depth cut each captured value as read cuts it") {
  Zoo z;
  double before = z.roundsPerSecond();
  const std::string at = " --at main.processJob main.items main.cfg -i 0.3 -d 0.5 --timeout 5";
  // Delve evaluates a breakpoint's expressions with its own per-hit limits
  // whatever it is asked; goscope evaluates them at the hit instead.
  auto cut = runCli("sample --max-string 2 --max-elements 1 --max-depth 0" + pidArg(z.pid()) + at);
  INFO("stderr: " << cut.err);
  REQUIRE(cut.exitCode == 0);
  const auto lines = splitLines(cut.out);
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) {
    CHECK(l.find("| main.items=[]string{len=3 cap=3: \"al…\"(+3 bytes), …} main.cfg=main.Config{Name: \"zo…\"(+1 bytes), "
                 "Workers: 8, ") != std::string::npos);
    CHECK(l.find("Tags: []string{len=2 cap=3: \"al…\"(+3 bytes), …}, Labels: map[string]int{len=3: …}} | pause ") !=
          std::string::npos);
  }
  // Without them, Delve's per-hit defaults: every string and element here.
  auto whole = runCli("sample" + pidArg(z.pid()) + at);
  INFO("stderr: " << whole.err);
  REQUIRE(whole.exitCode == 0);
  CHECK(whole.out.find("main.items=[]string{len=3 cap=3: \"alpha\", \"beta\", \"gamma\"}") != std::string::npos);
  expectError(runCli("sample --max-elements 0" + pidArg(z.pid()) + at), 2,
              "--max-elements wants a whole number from 1 to 100000, not '0'");
  checkZooUnharmed(z, before);
}


TEST_CASE("break: --max-string, --max-elements and --max-depth cut each value as sample cuts it, and plan Delve") {
  Zoo z;
  double before = z.roundsPerSecond();
  // processJob is called 16 times a round: Delve fits a budget of 100%.
  auto cut = runCli("break --explain --max-overhead 100 --max-string 2 --max-elements 1 --max-depth 0 -n 2" +
                    pidArg(z.pid()) + " main.processJob main.items main.cfg");
  INFO("stderr: " << cut.err);
  REQUIRE(cut.exitCode == 0);
  CHECK(cut.err.find("plan: delve") != std::string::npos);
  const auto lines = splitLines(cut.out);
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) {
    CHECK(l.find("| main.items=[]string{len=3 cap=3: \"al…\"(+3 bytes), …} main.cfg=main.Config{Name: \"zo…\"(+1 bytes), "
                 "Workers: 8, ") != std::string::npos);
    CHECK(l.find("Labels: map[string]int{len=3: …}}") != std::string::npos);
  }
  // Arguments alone a probe could read; a depth it cannot plans Delve.
  auto deep = runCli("break --explain --max-overhead 100 --args --max-depth 2 -n 1" + pidArg(z.pid()) + " main.processJob");
  INFO("stderr: " << deep.err);
  CHECK(deep.exitCode == 0);
  CHECK(deep.err.find("plan: delve") != std::string::npos);
  CHECK(deep.err.find("--max-elements, --max-depth and strings over 256 bytes are Delve's loading limits") != std::string::npos);
  // --max-string on both paths: the same 3 bytes of a string argument.
  for (const char* path : {"bpf", "delve"}) {
    auto g = runCli(std::string("break --strategy ") + path + " --args --max-string 3 -n 1" + pidArg(z.pid()) + " main.greet");
    CAPTURE(path);
    CHECK(g.exitCode == 0);
    CHECK(g.out.find("main.greet(name=\"gop…\"(+3 bytes))") != std::string::npos);
  }
  // A misspelt expression is still an error (evaluated at the hit now).
  auto bad = runCli("break --max-depth 0 -n 1" + pidArg(z.pid()) + " main.processJob main.nosuchvar");
  CHECK(bad.exitCode != 0);
  CHECK(bad.err.find("main.nosuchvar") != std::string::npos);
  expectError(runCli("break --max-elements 0" + pidArg(z.pid()) + " main.processJob main.items"), 2,
              "--max-elements wants a whole number from 1 to 100000, not '0'");
  checkZooUnharmed(z, before);
}

TEST_CASE("sample: one record per interval, with the pause each took") {
  Counter c;
  double before = c.rate();
  auto r = runCli("sample --json" + pidArg(c.pid()) + "--at main.doWork main.counter -i 0.5 -d 2.2");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto recs = callObjects(r.out);
  CHECK(recs.size() == 5);  // at 0, 0.5, 1, 1.5, 2 s
  int64_t last = -1;
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto& o = recs[i];
    CHECK(o.at("sample") == static_cast<int64_t>(i + 1));
    CHECK(o.at("miss") == false);
    CHECK(o.at("function") == "main.doWork");
    CHECK(o.at("goroutine").as_int64() > 0);
    CHECK(o.contains("time"));
    CHECK(std::abs(o.at("elapsed_s").to_number<double>() - 0.5 * i) < 0.25);
    double pause = o.at("pause_ms").to_number<double>();
    CHECK(pause > 0);
    CHECK(pause < 500);
    int64_t v = o.at("values").at("main.counter").as_int64();
    CHECK(v > last);
    last = v;
  }
  CHECK(r.err.find("5 samples (0 misses)") != std::string::npos);
  checkUnharmed(c, before);
}

TEST_CASE("sample: a function that is not called gives a miss per interval — text lines") {
  Counter c;
  double before = c.rate();
  auto r = runCli("sample" + pidArg(c.pid()) + "--at main.main main.counter -i 0.4 -d 1 --timeout 0.1");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto lines = splitLines(r.out);
  CHECK(lines.size() == 3);
  const std::regex miss(R"(\d\d:\d\d:\d\d\.\d{3} main\.main not called within 0\.1 s \(miss\) \| pause \d+\.\d ms)");
  for (const auto& l : lines) CHECK(std::regex_match(l, miss));

  auto hit = runCli("sample" + pidArg(c.pid()) + "--at main.doWork main.counter -i 0.3 -d 0.5");
  REQUIRE(hit.exitCode == 0);
  const std::regex record(R"(\d\d:\d\d:\d\d\.\d{3} g1 main\.doWork main\.go:\d+ \| main\.counter=\d+ \| pause \d+\.\d ms)");
  for (const auto& l : splitLines(hit.out)) CHECK(std::regex_match(l, record));
  checkUnharmed(c, before);
}

// ---- break --------------------------------------------------------------------

TEST_CASE("break --cond: only hits that match, with arguments and stacks") {
  Zoo z;
  double before = z.roundsPerSecond();
  // mayPanic(i) is called with i = 0..9 each round.
  auto r = runCli("break --json" + pidArg(z.pid()) + "main.mayPanic main.cfg.Name --args --stack 2 --cond 'i == 7' -n 5");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto hits = callObjects(r.out);
  REQUIRE(hits.size() == 5);
  for (size_t n = 0; n < hits.size(); ++n) {
    const auto& h = hits[n];
    CHECK(h.at("hit") == static_cast<int64_t>(n + 1));
    CHECK(h.at("args").at("i") == 7);  // the condition held at every hit
    CHECK(h.at("function") == "main.mayPanic");
    CHECK(h.at("file").as_string().ends_with("/fixtures/go/zoo/funcs.go"));
    CHECK(h.at("line").as_int64() > 0);
    CHECK(h.at("goroutine").as_int64() > 0);
    CHECK(h.at("values").at("main.cfg.Name") == "zoo");
    const auto& stack = h.at("stack").as_array();
    REQUIRE(stack.size() == 2);
    CHECK(stack[0].at("function") == "main.mayPanic");
    CHECK(stack[1].at("function") == "main.runRound");
  }
  CHECK(std::regex_search(r.err, std::regex(R"(5 hits in \d+\.\d\d s( \(\d+\.\d hits/s measured in the kernel before the session\))?; hit count reached)")));

  auto text = runCli("break" + pidArg(z.pid()) + "main.mayPanic --args --cond 'i > 7' -n 4");
  REQUIRE(text.exitCode == 0);
  auto lines = splitLines(text.out);
  REQUIRE(lines.size() == 4);
  for (const auto& l : lines)
    CHECK(std::regex_match(l, std::regex(R"(\d\d:\d\d:\d\d\.\d{3} g\d+ main\.mayPanic\(i=[89]\) funcs\.go:\d+)")));
  checkZooUnharmed(z, before);
}

TEST_CASE("break: every hit until -d, and the achieved rate") {
  Counter c;
  double before = c.rate();
  auto r = runCli("break" + pidArg(c.pid()) + "main.doWork main.counter -d 1");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto lines = splitLines(r.out);
  REQUIRE(lines.size() > 10);
  int64_t last = -1;
  for (const auto& l : lines) {  // doWork increments the counter once per call: one hit each
    auto at = l.find("main.counter=");
    REQUIRE(at != std::string::npos);
    int64_t v = std::stoll(l.substr(at + 13));
    if (last >= 0) CHECK(v == last + 1);
    last = v;
  }
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex(R"((\d+) hits in (\d+\.\d\d) s \((\d+\.\d) hits/s\); duration reached)")));
  CHECK(std::stoll(m[1]) == static_cast<long long>(lines.size()));
  MESSAGE("break on every call of main.doWork: " << m[3] << " hits/s");
  checkUnharmed(c, before);
}

TEST_CASE("break: ends when nobody reads its output any more (| head)") {
  Counter c;
  double before = c.rate();
  auto t0 = Clock::now();
  auto r = run("timeout 20 " + cliPath() + " break" + pidArg(c.pid()) + "main.doWork main.counter | head -2");
  CHECK(splitLines(r.out).size() == 2);
  CHECK(Clock::now() - t0 < 10s);  // not held until the timeout
  checkUnharmed(c, before);
}

// ---- set ----------------------------------------------------------------------

TEST_CASE("set: main.counter=5 shows in the counter's next report") {
  Counter c;
  double before = c.rate();
  for (int i = 0; i < 3; ++i) REQUIRE(c.nextReport() > 0);  // a few seconds of counting
  auto r = runCli("set" + pidArg(c.pid()) + "main.counter=5 --allow-write");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  std::smatch m;
  REQUIRE(std::regex_match(r.out, m, std::regex(R"(main\.counter = (\d+) -> 5 \(int64\)\n)")));
  int64_t old = std::stoll(m[1]);
  // The report that spans the write goes backwards: "counter: n (negative
  // ops/s)", n below the value overwritten (before it, reports only grow).
  bool seen = false;
  for (int i = 0; i < 5 && !seen; ++i) {
    std::string line;
    REQUIRE(c.child.readLine(line, 3000));
    std::smatch rm;
    REQUIRE(std::regex_match(line, rm, std::regex(R"(counter: (\d+) \((-?\d+) ops/s\))")));
    if (std::stoll(rm[2]) < 0) {
      seen = true;
      CHECK(std::stoll(rm[1]) < old);
      MESSAGE("before the write " << old << ", the report after it: " << line);
    }
  }
  CHECK(seen);
  checkUnharmed(c, before);
}

TEST_CASE("set --json on a struct field — read sees it") {
  Zoo z;
  double before = z.roundsPerSecond();
  auto r = runCli("set --json" + pidArg(z.pid()) + "main.cfg.Workers=3 --allow-write");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto objs = callObjects(r.out);
  REQUIRE(objs.size() == 1);
  CHECK(objs[0].at("var") == "main.cfg.Workers");
  CHECK(objs[0].at("type") == "int");
  CHECK(objs[0].at("old") == 8);
  CHECK(objs[0].at("new") == 3);
  auto read = runCli("read" + pidArg(z.pid()) + "main.cfg.Workers");
  CHECK(read.out == "main.cfg.Workers = 3 (int)\n");
  checkZooUnharmed(z, before);
}

// Values Delve would convert silently are refused, and several assignments
// are all or nothing: checked together before the first is written.
TEST_CASE("set refuses out-of-range and ill-typed values before writing anything") {
  Zoo z;
  double before = z.roundsPerSecond();
  auto range = runCli("set" + pidArg(z.pid()) + "main.cfg.Workers=99999999999999999999999 --allow-write");
  CHECK(range.exitCode == 2);
  CHECK(range.err.find("is out of range for int") != std::string::npos);
  auto expr = runCli("set" + pidArg(z.pid()) + "'main.cfg.Workers=1<<70' --allow-write");
  CHECK(expr.exitCode == 2);
  auto pair = runCli("set" + pidArg(z.pid()) + "main.cfg.Workers=3 main.cfg.Ratio=abc --allow-write");
  INFO("stderr: " << pair.err);
  CHECK(pair.exitCode == 5);
  CHECK(pair.err.find("main.cfg.Ratio=abc") != std::string::npos);
  CHECK(pair.err.find("nothing was written") != std::string::npos);
  CHECK(pair.out.empty());
  auto read = runCli("read" + pidArg(z.pid()) + "main.cfg.Workers");
  CHECK(read.out == "main.cfg.Workers = 8 (int)\n");  // the first assignment was not written either
  checkZooUnharmed(z, before);
}

// ---- goscope SIGKILLed in the middle of a break session ------------------------

namespace {

enum class KillAt {
  Attached,               // attached, target stopped, no breakpoint (sample, before its first sample)
  StoppedAtBreakpoint,    // break, blocked printing a hit: the target sits at the breakpoint
  RunningWithBreakpoint,  // break with a condition that never holds: it traps all the time
  HitLoop,                // break on every call, hits flowing
};

void killGoscopeAt(KillAt at) {
  Counter c;
  double before = c.rate();
  std::string errPath = scratch() + "/stderr-" + std::to_string(static_cast<int>(at));
  int errFile = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(errFile >= 0);
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  FullPipe full;
  const std::string pid = std::to_string(c.pid());
  pid_t g = -1;
  switch (at) {
    case KillAt::Attached:  // its first stderr line blocks: after attaching, before any breakpoint
      g = spawnCli({"sample", "-p", pid, "--at", "main.doWork", "main.counter"}, devnull, full.w);
      REQUIRE(waitUntil([&] { return procState(c.pid()) == 't' && !dlvAttachedTo(c.pid()).empty(); }, 20s));
      std::this_thread::sleep_for(300ms);
      CHECK(procState(c.pid()) == 't');
      CHECK(c.codeIntact(c.doWork));  // no breakpoint of ours yet (Delve's own are in runtime.throw & co.)
      break;
    case KillAt::StoppedAtBreakpoint:  // its first hit line blocks
      g = spawnCli({"break", "-p", pid, "main.doWork", "main.counter"}, full.w, errFile);
      REQUIRE(waitUntil([&] { return slurpFile(errPath).find("breakpoint at") != std::string::npos; }, 20s));
      std::this_thread::sleep_for(300ms);
      CHECK(procState(c.pid()) == 't');
      CHECK_FALSE(c.codeIntact(c.doWork));  // our int3 is in
      break;
    case KillAt::RunningWithBreakpoint:
      g = spawnCli({"break", "-p", pid, "main.doWork", "--cond", "main.counter < 0"}, devnull, errFile);
      REQUIRE(waitUntil([&] { return slurpFile(errPath).find("breakpoint at") != std::string::npos; }, 20s));
      std::this_thread::sleep_for(500ms);
      break;
    case KillAt::HitLoop:
      g = spawnCli({"break", "-p", pid, "main.doWork", "main.counter"}, devnull, errFile);
      REQUIRE(waitUntil([&] { return slurpFile(errPath).find("breakpoint at") != std::string::npos; }, 20s));
      std::this_thread::sleep_for(700ms);
      break;
  }
  ::kill(g, SIGKILL);
  int status = 0;
  ::waitpid(g, &status, 0);
  CHECK(WIFSIGNALED(status));
  ::close(errFile);
  ::close(devnull);
  auto t0 = Clock::now();
  CHECK_MESSAGE(waitUntraced(c.pid(), 30s), "dlv still attached after goscope was SIGKILLed");
  MESSAGE("untraced " << std::chrono::duration<double, std::milli>(Clock::now() - t0).count()
                      << " ms after goscope was SIGKILLed");
  checkUnharmed(c, before);
}

}  // namespace

TEST_CASE("SIGKILL of goscope while attached (target stopped, no breakpoint)") { killGoscopeAt(KillAt::Attached); }
TEST_CASE("SIGKILL of goscope while the target is stopped at its breakpoint") {
  killGoscopeAt(KillAt::StoppedAtBreakpoint);
}
TEST_CASE("SIGKILL of goscope while the target runs with its breakpoint set") {
  for (int round = 0; round < 2; ++round) killGoscopeAt(KillAt::RunningWithBreakpoint);
}
TEST_CASE("SIGKILL of goscope while hits flow") {
  for (int round = 0; round < 2; ++round) killGoscopeAt(KillAt::HitLoop);
}

TEST_CASE("Ctrl-C and SIGTERM end a break session cleanly, with its totals") {
  Counter c;
  double before = c.rate();
  for (int sig : {SIGINT, SIGTERM}) {
    std::string errPath = scratch() + "/stderr-signal";
    int errFile = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_t g = spawnCli({"break", "-p", std::to_string(c.pid()), "main.doWork", "--cond", "main.counter < 0"}, devnull,
                       errFile);
    REQUIRE(waitUntil([&] { return slurpFile(errPath).find("breakpoint at") != std::string::npos; }, 20s));
    std::this_thread::sleep_for(300ms);
    ::kill(g, sig);
    int status = 0;
    ::waitpid(g, &status, 0);
    ::close(errFile);
    ::close(devnull);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(slurpFile(errPath).find("0 hits in") != std::string::npos);
    CHECK(slurpFile(errPath).find("interrupted") != std::string::npos);
    CHECK(waitUntraced(c.pid(), 10s));
  }
  checkUnharmed(c, before);
}

// ---- errors -------------------------------------------------------------------

TEST_CASE("delve errors: one line with a hint, the documented exit code") {
  SUBCASE("dlv not installed") {
    Counter c;
    // A plain variable needs no dlv (it is read directly); an expression does.
    // goscope looks on $PATH and in the toolchain cache (docs/delve.md, "Which Delve").
    auto r = run("PATH=/nonexistent GOSCOPE_TOOLCHAINS=/nonexistent " + cliPath() + " read" + pidArg(c.pid()) + "'main.counter + 1'");
    expectError(r, 7, "dlv (Delve) is not installed");
    CHECK(r.err.find("apt-get install delve") != std::string::npos);
    CHECK(splitLines(r.err).size() == 1);
    CHECK(c.child.alive());
  }
  SUBCASE("a stripped binary: the BPF path works on it") {
    Child stripped({fixture("counter", "stripped")});
    std::this_thread::sleep_for(200ms);
    for (const std::string cmd : {"read main.counter", "break --strategy delve main.doWork"}) {
      auto r = runCli(cmd + pidArg(stripped.pid()));
      expectError(r, 4, "has no DWARF debug info (stripped)");
      CHECK(r.err.find("goscope count/latency/trace") != std::string::npos);
      CHECK(splitLines(r.err).size() == 1);
    }
    // Left to choose, break takes the BPF plan, which needs no DWARF.
    auto b = runCli("break -n 2 --explain" + pidArg(stripped.pid()) + "main.doWork");
    INFO(b.err);
    CHECK(b.exitCode == 0);
    CHECK(splitLines(b.out).size() == 2);
    CHECK(b.err.find("plan: bpf") != std::string::npos);
    CHECK(b.err.find("stripped") != std::string::npos);
    CHECK(stripped.alive());
    CHECK(tracerPid(stripped.pid()) == 0);
  }
  SUBCASE("a Go version the installed Delve does not support") {
    // The counter with its DWARF producer rewritten to another Go release
    // (same length): what Delve reads to tell the compiler's version.
    std::string plain = scratch() + "/counter-plain", patched = scratch() + "/counter-go1.29";
    REQUIRE(run("objcopy --decompress-debug-sections " + fixture("counter") + " " + plain).exitCode == 0);
    std::string bytes = slurpFile(plain);
    const std::string from = "Go cmd/compile go1.19", to = "Go cmd/compile go1.29";
    size_t replaced = 0;
    for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1), ++replaced)
      bytes.replace(at, from.size(), to);
    REQUIRE_MESSAGE(replaced > 0, "the fixture is not built by Go 1.19: adapt this test");
    std::ofstream(patched, std::ios::binary) << bytes;
    std::filesystem::permissions(patched, std::filesystem::perms::owner_all);
    Counter c({}, patched);
    double before = c.rate();
    auto r = runCli("read --strategy delve" + pidArg(c.pid()) + "main.counter");
    expectError(r, 4, "was built by go1.29");
    CHECK(r.err.find("outside what the installed Delve") != std::string::npos);
    CHECK(r.err.find("--check-go-version=false") != std::string::npos);
    checkUnharmed(c, before);
  }
  SUBCASE("unknown symbols, rejected expressions, refused writes") {
    Counter c;
    double before = c.rate();
    expectError(runCli("read" + pidArg(c.pid()) + "main.nosuch"), 5, "read: no package variable main.nosuch");
    expectError(runCli("read" + pidArg(c.pid()) + "'main.counter +'"), 2, "Delve cannot parse the expression");
    expectError(runCli("break" + pidArg(c.pid()) + "main.nosuch"), 5, "\"main.nosuch\" not found");
    expectError(runCli("break" + pidArg(c.pid()) + "main.doWork --cond 'main.counter +'"), 2, "Delve cannot parse");
    expectError(runCli("break" + pidArg(c.pid()) + "main.doWork main.nosuch -n 3"), 5, "main.nosuch");
    expectError(runCli("sample" + pidArg(c.pid()) + "--at main.nosuch main.counter"), 5, "\"main.nosuch\" not found");
    auto refused = runCli("set" + pidArg(c.pid()) + "main.counter=5");
    expectError(refused, 2, "refused without --allow-write");
    CHECK(splitLines(refused.err).size() == 1);
    expectError(runCli("set" + pidArg(c.pid()) + "main.counter --allow-write"), 2, "is not VAR=VALUE");
    checkUnharmed(c, before);
  }
  SUBCASE("no such process, not a Go process, no -p") {
    expectError(runCli("read -p 4000000 main.counter"), 3, "no process with PID 4000000");
    Child sleeper({"/bin/sleep", "30"});
    expectError(runCli("read" + pidArg(sleeper.pid()) + "main.counter"), 4, "is not a Go program");
    expectError(runCli("read main.counter"), 2, "read: name the process: -p PID");
    expectError(runCli("sample -p 1 --args"), 2, "--args are a call's: name the function with --at FUNC");
  }
  SUBCASE("the target exits during the session: what was recorded comes first, exit 8 (break: --strict)") {
    // The target ends once the session has recorded some (SIGTERM: Go's
    // runtime exits by it, through dlv), not by a timer of its own: on a
    // loaded machine dlv's attach took most of a 2 s life, and one sample
    // came before the end where two were asked.
    auto session = [&](const std::vector<std::string>& args, size_t recorded) {
      Counter c({"--duration", "60"});
      std::vector<std::string> argv = args;
      argv.insert(argv.begin() + 2, {"-p", std::to_string(c.pid())});
      size_t lines = 0;
      std::string out;
      GoscopeProcess g(argv, [&](const std::string& l) {
        lines++;
        out += l + "\n";
      });
      REQUIRE(waitUntil(
          [&] {
            g.pump();
            return lines >= recorded || !g.running();
          },
          60s));
      ::kill(c.pid(), SIGTERM);
      const int st = g.wait(60s);
      REQUIRE(st != -1);
      CommandResult r;
      r.exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      r.out = out;
      r.err = g.err();
      return r;
    };
    auto r = session({"break", "--strict", "main.doWork", "main.counter"}, 11);
    expectError(r, 8, "exited during the session", /*stdoutEmpty=*/false);
    CHECK(splitLines(r.out).size() > 10);  // the hits before it exited
    CHECK(r.err.find(" hits in ") != std::string::npos);
    auto sr = session({"sample", "--strict", "--at", "main.doWork", "main.counter", "-i", "0.3"}, 2);
    expectError(sr, 8, "exited during the session", /*stdoutEmpty=*/false);
    CHECK(splitLines(sr.out).size() >= 2);
  }
}
