// dlv dies, not goscope (issue #12 item 1). When dlv is SIGKILLed (or the
// OOM killer picks it) the kernel detaches its tracee and lets it run with
// Delve's int3 bytes still in its code: the next hit is an untraced SIGTRAP
// and the target dies ("SIGTRAP: trace trap"). The guardian (dlv's parent)
// notices dlv's death at once and writes the file's bytes back; goscope does
// it if the guardian died too. And `goscope doctor` finds and restores int3
// bytes left in any process's code.
//
// Each case here: zoo (the fixture that checks its own results every round)
// must be alive, make progress with every check passing, be untraced, and
// its whole .text must equal the file.
//   - dlv SIGKILLed while a `break` runs on main.(*Server).Handle, with zoo
//     between rounds (no hit in flight): GOSCOPE_KILL_ROUNDS rounds (10);
//   - goscope and its guardian SIGKILLed together; `pkill -9 goscope` as it
//     reaches them (the guardian is named gs-guardian); the whole process
//     group of goscope;
//   - doctor on a clean process; on a process with int3 bytes written into a
//     function it never calls; beside a live uprobe of a BPF session.
// The figures for kills at random moments (the target running between hits
// or sitting at a hit) come from "dlv death: measured", skipped by default:
//   build/goscope_runtime_tests -tc='dlv death: measured*' --no-skip
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "backend/delve/delve_session.hpp"
#include "support/goscope_process.hpp"
#include "support/pausable_zoo.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kHandle = "main.(*Server).Handle";

pid_t parentOf(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  auto rp = stat.rfind(')');
  if (rp == std::string::npos) return -1;
  std::istringstream rest(stat.substr(rp + 2));
  char state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

std::string commOf(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// A `goscope break --strategy delve` on Handle that has printed `hits` hits.
struct Break {
  int hits = 0;
  GoscopeProcess g;
  pid_t dlv = -1, guardian = -1;
  explicit Break(pid_t target, const std::vector<std::string>& extra = {})
      : g(args(target, extra), [this](const std::string&) { ++hits; }) {}
  static std::vector<std::string> args(pid_t target, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"break", "--strategy", "delve", "-p", std::to_string(target), kHandle};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // Waits for the first hits, then finds dlv and the guardian.
  void attached(pid_t target, int wantHits = 1) {
    REQUIRE_MESSAGE(waitUntil([&] { g.pump(); return hits >= wantHits || !g.running(); }, 60s),
                    "no hit within 60 s; stderr: " << g.err());
    REQUIRE_MESSAGE(g.running(), "goscope exited; stderr: " << g.err());
    auto dlvs = dlvAttachedTo(target);
    REQUIRE(dlvs.size() == 1);
    dlv = dlvs[0];
    guardian = parentOf(dlv);
    REQUIRE(guardian > 0);
    CHECK(parentOf(guardian) == g.pid());
  }
};

// zoo alive, untraced, no goscope or guardian left, .text equal to the file,
// and new rounds pass their checks.
void checkZooUnharmed(PausableZoo& zoo, bool paused) {
  REQUIRE_MESSAGE(alive(zoo.pid()), "zoo died (state " << procState(zoo.pid()) << ")");
  CHECK_MESSAGE(waitUntraced(zoo.pid(), 30s), "dlv still attached to zoo");
  CHECK_MESSAGE(waitUntil([&] { return goscopesFor(zoo.pid()).empty(); }, 30s), "a goscope or its guardian is left");
  uint64_t diff = 0;
  waitUntil([&] { return (diff = textDifference(zoo.pid(), zoo.elf())) == 0; }, 2s);
  REQUIRE_MESSAGE(diff == 0, "zoo's .text differs from the file at 0x" << std::hex << diff);
  if (paused) zoo.resume();
  REQUIRE_MESSAGE(alive(zoo.pid()), "zoo died once resumed");
  int64_t from = zoo.last().rounds;
  CHECK_MESSAGE(waitUntil([&] { return !zoo.drain(100) || zoo.last().rounds > from + 1; }, 30s),
                "zoo made no progress (state " << procState(zoo.pid()) << ")");
  CHECK_MESSAGE(zoo.firstBadLine().empty(), zoo.firstBadLine());
  REQUIRE(alive(zoo.pid()));
  CHECK(procState(zoo.pid()) != 'T');
}

// goscope in a process group of its own, stdout and stderr in files.
struct GroupedGoscope {
  pid_t pid = -1;
  std::string out = "/tmp/gs-dlvdeath-" + std::to_string(::getpid()) + ".out";
  std::string err = "/tmp/gs-dlvdeath-" + std::to_string(::getpid()) + ".err";
  explicit GroupedGoscope(const std::vector<std::string>& args) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE((o >= 0 && e >= 0));
    pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<std::string> full = {cliPath()};
      full.insert(full.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : full) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // whichever of the two runs first
    ::close(o);
    ::close(e);
  }
  ~GroupedGoscope() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::unlink(out.c_str());
    ::unlink(err.c_str());
  }
  size_t lines() const {
    auto s = slurpFile(out);
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }
};

// A copy of zoo under /tmp: doctor's test writes into its process only, and
// uprobe links of other tests on the shared fixture path are not on it.
struct ZooCopy {
  std::string path;
  ZooCopy() {
    path = "/tmp/gs-dlvdeath-zoo-" + std::to_string(::getpid());
    std::filesystem::copy_file(fixture("zoo"), path, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }
  ~ZooCopy() { std::filesystem::remove(path); }
};

bool writeByte(pid_t pid, uint64_t addr, uint8_t b) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::pwrite(fd, &b, 1, static_cast<off_t>(addr)) == 1;
  ::close(fd);
  return ok;
}

}  // namespace

TEST_CASE("dlv death: dlv SIGKILLed while a break runs (zoo between rounds): zoo lives, its code equals the file" *
          doctest::test_suite("slow")) {
  const long rounds = envNumber("GOSCOPE_KILL_ROUNDS", 10);
  PausableZoo zoo;
  for (long round = 0; round < rounds; ++round) {
    CAPTURE(round);
    Break b(zoo.pid());
    b.attached(zoo.pid());
    CHECK(commOf(b.guardian) == "gs-guardian");
    // Between rounds zoo calls nothing Delve has a breakpoint on: dlv dies
    // while the target runs, its int3 bytes in place.
    zoo.pause();
    CHECK(textDifference(zoo.pid(), zoo.elf()) != 0);  // the breakpoint is there
    auto t0 = Clock::now();
    REQUIRE(::kill(b.dlv, SIGKILL) == 0);
    int status = b.g.wait(30s);
    INFO("goscope stderr: " << b.g.err());
    REQUIRE(status != -1);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);  // external tool failed: dlv exited unexpectedly
    CHECK(b.g.err().find("dlv exited unexpectedly") != std::string::npos);
    MESSAGE("round " << round << ": goscope exited "
                     << std::chrono::duration<double, std::milli>(Clock::now() - t0).count()
                     << " ms after dlv's SIGKILL");
    checkZooUnharmed(zoo, /*paused=*/true);
  }
}

TEST_CASE("dlv death: dlv and the guardian SIGKILLed together: the sentinel restores the bytes") {
  PausableZoo zoo;
  Break b(zoo.pid());
  b.attached(zoo.pid());
  zoo.pause();
  // The guardian is frozen first, so that dlv dies of this SIGKILL and not
  // of its parent-death signal; either way the guardian's sentinel, a
  // process of its own, holds dlv's tracer thread as it dies and restores
  // the bytes before the kernel lets zoo go.
  ::kill(b.guardian, SIGSTOP);
  ::kill(b.dlv, SIGKILL);
  ::kill(b.guardian, SIGKILL);
  int status = b.g.wait(30s);
  INFO("goscope stderr: " << b.g.err());
  REQUIRE(status != -1);
  CHECK(WEXITSTATUS(status) == 7);
  CHECK(b.g.err().find("sentinel restored 4 of 4 breakpoint bytes") != std::string::npos);
  checkZooUnharmed(zoo, /*paused=*/true);
}

TEST_CASE("dlv death: goscope and its guardian SIGKILLed together, zoo between rounds: dlv dies with its guardian, zoo lives") {
  PausableZoo zoo;
  Break b(zoo.pid());
  b.attached(zoo.pid());
  zoo.pause();
  ::kill(b.guardian, SIGKILL);
  b.g.kill();
  checkZooUnharmed(zoo, /*paused=*/true);
}

TEST_CASE("dlv death: `pkill -9 goscope` reaches goscope only, not its guardian (gs-guardian): zoo lives" *
          doctest::test_suite("slow")) {
  const long rounds = std::max(1L, envNumber("GOSCOPE_KILL_ROUNDS", 10) / 2);
  PausableZoo zoo;
  for (long round = 0; round < rounds; ++round) {
    CAPTURE(round);
    Break b(zoo.pid());
    b.attached(zoo.pid(), 2);
    // What `pkill -9 goscope` matches (the name in /proc/PID/comm), among the
    // processes of this session only.
    std::vector<pid_t> named;
    for (pid_t p : goscopesFor(zoo.pid()))
      if (commOf(p).find("goscope") != std::string::npos) named.push_back(p);
    CHECK(named == std::vector<pid_t>{b.g.pid()});
    CHECK(commOf(b.guardian) == "gs-guardian");
    for (pid_t p : named) ::kill(p, SIGKILL);
    b.g.wait(30s);
    checkZooUnharmed(zoo, /*paused=*/false);
  }
}

TEST_CASE("dlv death: goscope's whole process group SIGKILLed while zoo hits the breakpoint: zoo lives" *
          doctest::test_suite("slow")) {
  const long rounds = std::max(1L, envNumber("GOSCOPE_KILL_ROUNDS", 10) / 2);
  PausableZoo zoo;
  for (long round = 0; round < rounds; ++round) {
    CAPTURE(round);
    GroupedGoscope g(Break::args(zoo.pid(), {}));
    REQUIRE_MESSAGE(waitUntil([&] { return g.lines() >= 2; }, 60s), slurpFile(g.err));
    auto dlvs = dlvAttachedTo(zoo.pid());
    REQUIRE(dlvs.size() == 1);
    // The guardian and dlv are in a group of their own: a Ctrl-C or a kill of
    // goscope's group reaches goscope only.
    CHECK(::getpgid(parentOf(dlvs[0])) != g.pid);
    REQUIRE(::kill(-g.pid, SIGKILL) == 0);
    ::waitpid(g.pid, nullptr, 0);
    g.pid = -1;
    checkZooUnharmed(zoo, /*paused=*/false);
  }
}

TEST_CASE("dlv death: doctor on a clean process reports nothing and exits 0") {
  ZooCopy copy;
  Child zoo({copy.path}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 5000));
  auto r = runCli("doctor -p " + std::to_string(zoo.pid()));
  INFO(r.err);
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("the code equals the file") != std::string::npos);
  CHECK(r.err.empty());
  auto j = runCli("doctor --json -p " + std::to_string(zoo.pid()));
  CHECK(j.exitCode == 0);
  CHECK(j.out.find("\"differing\":0") != std::string::npos);
  CHECK(j.out.find("\"functions\":[]") != std::string::npos);
}

TEST_CASE("dlv death: doctor finds int3 bytes written into functions zoo never calls, and --fix restores them") {
  ZooCopy copy;
  Child zoo({copy.path}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 5000));
  auto elfFile = ElfFile::open(copy.path);
  REQUIRE(elfFile);
  const ElfFile& elf = **elfFile;
  // Two cold functions: zoo never panics unrecovered nor dies of a signal.
  auto a = symbolOf(elf, "runtime.fatalpanic");
  auto b = symbolOf(elf, "runtime.dieFromSignal");
  REQUIRE(a.value != 0);
  REQUIRE(b.value != 0);
  REQUIRE(writeByte(zoo.pid(), a.value, 0xCC));
  REQUIRE(writeByte(zoo.pid(), a.value + 4, 0xCC));
  REQUIRE(writeByte(zoo.pid(), b.value + 1, 0xCC));
  REQUIRE(textDifference(zoo.pid(), elf) != 0);
  const std::string pid = std::to_string(zoo.pid());

  auto r = runCli("doctor -p " + pid);
  INFO(r.out << r.err);
  CHECK(r.exitCode == 9);
  CHECK(r.out.find("runtime.fatalpanic") != std::string::npos);
  CHECK(r.out.find("runtime.dieFromSignal") != std::string::npos);
  CHECK(r.out.find("3 bytes differ: 3 leftover int3") != std::string::npos);
  CHECK(r.err.find("--fix") != std::string::npos);
  CHECK(textDifference(zoo.pid(), elf) != 0);  // without --fix nothing is written

  auto j = runCli("doctor --json -p " + pid);
  CHECK(j.exitCode == 9);
  CHECK(j.out.find("\"int3\":3") != std::string::npos);

  auto f = runCli("doctor --fix -p " + pid);
  INFO(f.out << f.err);
  CHECK(f.exitCode == 0);
  CHECK(f.out.find("3 restored") != std::string::npos);
  CHECK(textDifference(zoo.pid(), elf) == 0);
  CHECK(zoo.alive());
  CHECK(procState(zoo.pid()) != 'T');  // SIGCONTed after the fix

  auto again = runCli("doctor -p " + pid);
  CHECK(again.exitCode == 0);
  // zoo still runs its rounds.
  std::string line;
  bool progressed = false;
  for (int i = 0; i < 5 && !progressed; ++i) progressed = zoo.readLine(line, 2000) && line.rfind("zoo: ok", 0) == 0;
  CHECK(progressed);
}

TEST_CASE("dlv death: doctor leaves a live uprobe alone and says whose it is") {
  ZooCopy copy;
  Child zoo({copy.path}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 5000));
  auto elf = ElfFile::open(copy.path);
  REQUIRE(elf);
  const std::string pid = std::to_string(zoo.pid());
  // --entry: the uprobe in main.add's own code (count alone would probe
  // main.add at its call sites, in main.runRound: issue #15).
  GoscopeProcess count({"count", "-p", pid, "main.add", "--entry", "-d", "20"});
  REQUIRE_MESSAGE(waitUntil([&] { return !uprobeMultiLinksFor(zoo.pid()).empty() || !count.running(); }, 30s),
                  count.err());
  REQUIRE(count.running());
  auto r = runCli("doctor --fix -p " + pid);
  INFO(r.out << r.err);
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("main.add") != std::string::npos);
  CHECK(r.out.find("a live uprobe (BPF link") != std::string::npos);
  CHECK(r.out.find("0 restored") != std::string::npos);
  CHECK(textDifference(zoo.pid(), **elf) != 0);  // the uprobe is still there
  count.signal(SIGINT);
  CHECK(count.wait(30s) != -1);
  CHECK(waitUntil([&] { return textDifference(zoo.pid(), **elf) == 0; }, 5s));
  auto after = runCli("doctor -p " + pid);
  CHECK(after.exitCode == 0);
}

// A live debugger's breakpoints are int3 bytes too, and not leftovers: with
// TracerPid set, doctor names the tracer and writes nothing, --fix included
// (docs/security.md). The debugger here is goscope's own dlv, holding a
// breakpoint on a function zoo never calls.
TEST_CASE("dlv death: doctor beside a live dlv names it, calls its int3 bytes its own and changes nothing") {
  ZooCopy copy;
  Child zoo({copy.path}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 5000));
  auto elf = ElfFile::open(copy.path);
  REQUIRE(elf);
  const std::string pid = std::to_string(zoo.pid());
  GoscopeProcess brk({"break", "-p", pid, "runtime.dieFromSignal", "-d", "60", "--strategy", "delve"});
  REQUIRE_MESSAGE(waitUntil([&] { return (tracerPid(zoo.pid()) != 0 && textDifference(zoo.pid(), **elf) != 0) ||
                                         !brk.running(); }, 60s),
                  brk.err());
  REQUIRE(brk.running());
  // TracerPid names dlv's tracing thread; doctor names its process.
  const pid_t dlvThread = tracerPid(zoo.pid());
  pid_t dlv = 0;
  {
    std::ifstream st("/proc/" + std::to_string(dlvThread) + "/status");
    for (std::string line; std::getline(st, line);)
      if (line.rfind("Tgid:", 0) == 0) dlv = static_cast<pid_t>(std::stol(line.substr(5)));
  }
  REQUIRE(dlv > 0);
  // Every address where the code differs from the file now (dlv's
  // breakpoints; it may add more while it settles, never fewer).
  auto differing = [&] {
    std::vector<uint64_t> out;
    const auto* text = (*elf)->section(".text");
    auto file = (*elf)->sectionBytes(*text);
    auto mem = readMem(zoo.pid(), text->addr, file.size());
    for (size_t i = 0; i < mem.size() && i < file.size(); i++)
      if (mem[i] != file[i]) out.push_back(text->addr + i);
    return out;
  };
  const std::vector<uint64_t> before = differing();
  REQUIRE(!before.empty());
  for (const char* fix : {"", " --fix"}) {
    CAPTURE(fix);
    auto r = runCli(std::string("doctor") + fix + " -p " + pid);
    INFO(r.out << r.err);
    CHECK(r.exitCode == 0);
    CHECK(r.err.find("PID " + pid + " is traced by PID " + std::to_string(dlv) + " (dlv)") != std::string::npos);
    CHECK(r.err.find("nothing was changed") != std::string::npos);
    CHECK(r.out.find("an int3 of the live debugger (PID " + std::to_string(dlv)) != std::string::npos);
    CHECK(r.out.find("restored") == std::string::npos);
    const std::vector<uint64_t> now = differing();  // the breakpoints are where dlv put them
    CHECK(std::includes(now.begin(), now.end(), before.begin(), before.end()));
    CHECK(tracerPid(zoo.pid()) == dlvThread);
  }
  auto j = runCli("doctor --json --fix -p " + pid);
  CHECK(j.exitCode == 0);
  CHECK(j.out.find("\"tracer_pid\":" + std::to_string(dlv)) != std::string::npos);
  CHECK(j.out.find("\"restored\":0") != std::string::npos);
  CHECK(j.out.find("\"int3\":0") != std::string::npos);
  // The debugger goes on and ends as it would have: its own bytes removed.
  CHECK(brk.running());
  brk.signal(SIGINT);
  CHECK(brk.wait(60s) == 0);
  CHECK(waitUntraced(zoo.pid(), 10s));
  CHECK(textDifference(zoo.pid(), **elf) == 0);
  CHECK(zoo.alive());
}

// Measurements for docs/delve.md and docs/reliability.md: dlv SIGKILLed at a
// random moment 0-2 s after the first hit of a break on Handle, zoo running
// freely; a fresh zoo every round. Whether zoo was stopped (state t: at a
// hit or in one of Delve's internal stops) just before the kill is recorded.
TEST_CASE("dlv death: measured, dlv SIGKILLed at random moments of a break on Handle" * doctest::skip()) {
  const long rounds = envNumber("GOSCOPE_KILL_ROUNDS", 30);
  std::mt19937_64 rng(envNumber("GOSCOPE_KILL_SEED", 12));
  int runningKills = 0, runningSurvived = 0, stoppedKills = 0, stoppedSurvived = 0;
  for (long round = 0; round < rounds; ++round) {
    PausableZoo zoo;
    Break b(zoo.pid());
    b.attached(zoo.pid());
    auto delay = std::chrono::microseconds(std::uniform_int_distribution<long>(0, 2'000'000)(rng));
    auto until = Clock::now() + delay;
    while (Clock::now() < until) {
      b.g.pump();
      std::this_thread::sleep_for(1ms);
    }
    const char state = procState(zoo.pid());
    ::kill(b.dlv, SIGKILL);
    b.g.wait(30s);
    std::this_thread::sleep_for(1500ms);  // Handle runs twice a round: a leftover int3 is hit by now
    const bool lived = alive(zoo.pid()) && textDifference(zoo.pid(), zoo.elf()) == 0;
    if (state == 't') {
      ++stoppedKills;
      stoppedSurvived += lived;
    } else {
      ++runningKills;
      runningSurvived += lived;
    }
    const std::string verdict = lived ? "lived" : "DIED";
    MESSAGE("round " << round << ": state " << std::string(1, state) << " before the kill, zoo " << verdict);
  }
  MESSAGE("dlv SIGKILLed while zoo ran: " << runningSurvived << " of " << runningKills
                                          << " survived; while zoo was stopped (t): " << stoppedSurvived << " of "
                                          << stoppedKills);
}

// Case (b) exactly: the target sits stopped at a hit (continueToBreakpoint
// returned, so Delve has stopped every thread and rewound the hitting one's
// PC onto the int3) when dlv is SIGKILLed. The kernel releases the threads
// as dlv's tracer thread exits; the guardian restores the bytes as fast as it
// can. Measured, not asserted: docs/delve.md says why it cannot be won.
TEST_CASE("dlv death: measured, dlv SIGKILLed while the target sits at a hit" * doctest::skip()) {
  const long rounds = envNumber("GOSCOPE_KILL_ROUNDS", 10);
  int survived = 0, equal = 0;
  for (long round = 0; round < rounds; ++round) {
    Counter c;
    auto s = delve::DelveSession::attach(c.pid());
    REQUIRE(s);
    auto bp = (*s)->createBreakpoint({.location = "main.doWork"});
    REQUIRE(bp);
    auto ev = (*s)->continueToBreakpoint(5s);
    REQUIRE(ev);
    REQUIRE_FALSE(ev->hits.empty());
    ::kill((*s)->dlvPid(), SIGKILL);
    std::this_thread::sleep_for(1s);  // main.doWork runs all the time: a leftover int3 is hit at once
    const bool lived = alive(c.pid());
    survived += lived;
    equal += lived && c.codeIntact(c.doWork);
    MESSAGE("round " << round << ": " << (lived ? std::string("lived") : std::string("DIED")));
    s->reset();  // dlv is gone: the session ends as Dead
  }
  MESSAGE("dlv SIGKILLed with the counter stopped at a hit of main.doWork: " << survived << " of " << rounds
                                                                           << " lived, " << equal
                                                                           << " with main.doWork equal to the file");
}
