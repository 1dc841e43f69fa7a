// The Delve kill cases on a loaded machine: the test starts a CPU hog per
// core, three times over (GOSCOPE_HOGS_PER_CPU), and stops them by PID. Each
// case runs GOSCOPE_LOADED_ROUNDS rounds (5 in CI; scripts/loaded-tier.sh
// runs 20), a fresh target every round:
//   - dlv SIGKILLed at a random moment while a breakpoint is set on a
//     function the target calls ~1,000 times a second (pacer's main.scale);
//   - the guardian SIGKILLed alone (dlv dies with it: its parent-death signal);
//   - goscope, the guardian and dlv SIGKILLed together;
//   - the target execs another program in the middle of the session;
//   - the target SIGKILLed in the middle of the session.
// After every round: the target alive and running (not stopped), untraced
// (TracerPid 0), no dlv and no goscope process (goscope, gs-guardian,
// gs-sentinel) left, every executable mapping byte for byte equal to its file
// (for an exec: the new program's); a killed target reaped by its parent.
// docs/delve.md, "When dlv dies", says why each of these can be won.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <map>
#include <random>
#include <regex>

#include "support/cpu_hogs.hpp"
#include "support/goscope_process.hpp"
#include "support/unharmed.hpp"
#include "process/exe_text.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

long rounds() { return std::max(1L, envNumber("GOSCOPE_LOADED_ROUNDS", 5)); }

// A CPU hog per core, `perCpu` times over (GOSCOPE_HOGS_PER_CPU, 3 by
// default); they die with the test, even a SIGKILLed one.
struct Hogs {
  CpuHogs hogs{static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN) * envNumber("GOSCOPE_HOGS_PER_CPU", 3))};
  Hogs() { MESSAGE(hogs.size() << " CPU hogs started; load average " << loadAverage()); }
};

// The target: a fixture with stdout and stderr in files; the test is its
// parent and reaps it.
struct Target {
  pid_t pid = -1;
  std::string out, err;
  int status = -1;
  explicit Target(const std::vector<std::string>& argv) {
    static int serial = 0;
    const std::string base = "/tmp/gs-loaded-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    out = base + ".out";
    err = base + ".err";
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE((o >= 0 && e >= 0));
    pid = ::fork();
    if (pid == 0) {
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
    ::close(o);
    ::close(e);
    REQUIRE(pid > 0);
    REQUIRE(waitUntil([&] { return slurpFile(out).find("ready") != std::string::npos || !alive(pid); }, 20s));
  }
  ~Target() {
    if (status == -1) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::unlink(out.c_str());
    ::unlink(err.c_str());
  }
  // Reaped within `timeout`: its wait status; -1 if not.
  int reap(std::chrono::milliseconds timeout) {
    if (status != -1) return status;
    waitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, timeout);
    return ::waitpid(pid, &status, WNOHANG) == pid || status != -1 ? status : -1;
  }
  // Why it died, from Go's runtime on stderr: the message, then the
  // traceback's first lines (PC, signal code, the goroutine running), which
  // are what tells a stray int3 from a Go fault.
  std::string why() const {
    std::smatch m;
    std::string e = slurpFile(err);
    if (!std::regex_search(e, m, std::regex(R"((SIG[A-Z]+: [^\n]*|fatal error: [^\n]*|unexpected [^\n]*|panic: [^\n]*))")))
      return e.empty() ? "no message" : "stderr: " + e.substr(0, 2000);
    std::string head = e.substr(static_cast<size_t>(m.position(0)), 2000);
    return m.str(1) + "\n--- its stderr from there ---\n" + head;
  }
};

// Every executable mapping of its executable equal to the file: "" or where not.
std::string codeDiffers(pid_t pid) {
  auto maps = exeTextMappings(pid);
  if (!maps) return "cannot read its mappings: " + maps.error().message;
  auto diff = compareExeText(pid, *maps);
  if (!diff) return "cannot compare: " + diff.error().message;
  if (diff->empty()) return {};
  std::ostringstream s;
  s << diff->size() << " byte(s) differ, the first at 0x" << std::hex << diff->front().addr << " (memory 0x"
    << int(diff->front().memory) << ", file 0x" << int(diff->front().file) << ")";
  return s.str();
}

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

// How a target that died before the test reaped it ended: a zombie's
// /proc/PID/stat ends with its wait status (field 52, exit_code).
std::string howItEnded(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return "gone (reaped)";
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
  if (f.empty() || f[0] != "Z") return "state " + (f.empty() ? std::string("?") : f[0]) + ", not dead";
  const int st = std::stoi(f.back());
  if (WIFSIGNALED(st)) return "killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(st));
}

// `goscope break --strategy delve` on one function of the target.
struct Break {
  int hits = 0;
  GoscopeProcess g;
  pid_t dlv = -1, guardian = -1;
  Break(pid_t target, const std::string& func, const std::vector<std::string>& extra = {})
      : g(args(target, func, extra), [this](const std::string&) { ++hits; }) {}
  static std::vector<std::string> args(pid_t target, const std::string& func, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"break", "--strategy", "delve", "-p", std::to_string(target), func};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  void attached(const Target& t, int wantHits) {
    const pid_t target = t.pid;
    REQUIRE_MESSAGE(waitUntil([&] { g.pump(); return hits >= wantHits || !g.running(); }, 120s),
                    "no hit within 120 s; stderr: " << g.err());
    REQUIRE_MESSAGE(g.running(), "goscope exited after " << hits << " hit(s) (the target: " << howItEnded(target)
                                     << "; " << t.why() << "); goscope's stderr: " << g.err());
    auto dlvs = dlvAttachedTo(target);
    REQUIRE(dlvs.size() == 1);
    dlv = dlvs[0];
    guardian = parentOf(dlv);
    REQUIRE(guardian > 0);
  }
  void pumpFor(std::chrono::microseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) {
      g.pump();
      std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), 2ms));
    }
  }
};

// What the sentinel said it did ("dlv died holding PID ...: ...").
std::string releaseLine(const std::string& err) {
  auto at = err.find("dlv died holding PID");
  return at == std::string::npos ? std::string() : err.substr(at, err.find('\n', at) - at);
}

// The guarantees after a round: nothing of goscope's left, the target
// untraced, running, its code equal to its file.
void checkLeftAlone(Target& t) {
  CHECK_MESSAGE(waitUntil([&] { return dlvAttachedTo(t.pid).empty(); }, 30s), "a dlv is left");
  CHECK_MESSAGE(waitUntil([&] { return goscopesFor(t.pid).empty(); }, 30s), "a goscope process is left (goscope, gs-guardian or gs-sentinel)");
  REQUIRE_MESSAGE(alive(t.pid), "the target died: " << t.why());
  CHECK_MESSAGE(waitUntraced(t.pid, 10s), "TracerPid " << tracerPid(t.pid));
  CHECK_MESSAGE(waitUntil([&] { char s = procState(t.pid); return s != 'T' && s != 't'; }, 5s),
                "the target is left stopped (state " << procState(t.pid) << ")");
  std::string diff;
  waitUntil([&] { return (diff = codeDiffers(t.pid)).empty(); }, 2s);
  CHECK_MESSAGE(diff.empty(), "the target's code differs from its file: " << diff);
  // It still runs its loop: pacer prints its count every second.
  const size_t before = slurpFile(t.out).size();
  CHECK_MESSAGE(waitUntil([&] { return slurpFile(t.out).size() > before || !alive(t.pid); }, 20s),
                "the target made no progress");
  REQUIRE_MESSAGE(alive(t.pid), "the target died after the round: " << t.why());
}

std::mt19937_64 seeded() {
  uint64_t seed = static_cast<uint64_t>(envNumber("GOSCOPE_KILL_SEED", -1));
  if (seed == static_cast<uint64_t>(-1)) seed = std::random_device{}() & 0x7fffffff;
  MESSAGE("GOSCOPE_KILL_SEED=" << seed << " replays these delays");
  return std::mt19937_64(seed);
}

enum class Victim { Dlv, Guardian, All, FrozenDlv };

void killRounds(Victim v, const std::string& rate) {
  Hogs hogs;
  auto rng = seeded();
  std::map<std::string, int> did;  // what the sentinel reported, summed
  for (long round = 0; round < rounds(); ++round) {
    CAPTURE(round);
    Target t({fixture("pacer"), "--rate", rate});
    Break b(t.pid, "main.scale");
    b.attached(t, rate == "10" ? 2 : 20);
    b.pumpFor(std::chrono::microseconds(std::uniform_int_distribution<long>(0, 1'000'000)(rng)));
    if (v == Victim::FrozenDlv) {
      // dlv stopped (SIGSTOP) while the target runs: a thread that hits the
      // breakpoint now sits in a SIGTRAP stop dlv never collects, which the
      // kernel would deliver when dlv dies ("SIGTRAP: trace trap").
      waitUntil([&] { return procState(t.pid) != 't'; }, 2s);
      ::kill(b.dlv, SIGSTOP);
      std::this_thread::sleep_for(200ms);
    }
    const char state = procState(t.pid);
    if (v == Victim::All) {
      ::kill(b.g.pid(), SIGKILL);
      ::kill(b.guardian, SIGKILL);
      ::kill(b.dlv, SIGKILL);
    } else {
      REQUIRE(::kill(v == Victim::Guardian ? b.guardian : b.dlv, SIGKILL) == 0);
    }
    const int status = b.g.wait(60s);
    INFO("goscope stderr: " << b.g.err());
    if (v != Victim::All) {
      REQUIRE_MESSAGE(status != -1, "goscope did not end within 60 s");
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 7);
      CHECK(b.g.err().find("dlv exited unexpectedly") != std::string::npos);
    }
    const std::string line = releaseLine(b.g.err());
    MESSAGE("round " << round << ": " << b.hits << " hits, the target in state " << state << " at the kill; "
                     << (line.empty() ? std::string("(no report)") : line) << "; load " << loadAverage());
    for (const char* k : {"undid", "moved", "cleared", "discarded", "restored"})
      if (line.find(k) != std::string::npos) did[k]++;
    checkLeftAlone(t);
  }
  std::string sum;
  for (const auto& [k, n] : did) sum += " " + k + " in " + std::to_string(n) + ";";
  MESSAGE(rounds() << " rounds, the target alive and intact in every one; the sentinel" << (sum.empty() ? " did nothing" : sum));
}

}  // namespace

TEST_CASE("loaded: dlv SIGKILLed while a breakpoint is hit ~1,000 times a second" * doctest::test_suite("loaded")) {
  killRounds(Victim::Dlv, "1000");
}

TEST_CASE("loaded: dlv SIGKILLed while a breakpoint is hit ~10 times a second" * doctest::test_suite("loaded")) {
  killRounds(Victim::Dlv, "10");
}

TEST_CASE("loaded: dlv stopped while the target runs, then SIGKILLed: the SIGTRAP it never collected is undone" *
          doctest::test_suite("loaded")) {
  killRounds(Victim::FrozenDlv, "1000");
}

TEST_CASE("loaded: the guardian SIGKILLed alone, breakpoint hit ~1,000 times a second" * doctest::test_suite("loaded")) {
  killRounds(Victim::Guardian, "1000");
}

TEST_CASE("loaded: goscope, its guardian and dlv SIGKILLed together, ~1,000 hits a second" * doctest::test_suite("loaded")) {
  killRounds(Victim::All, "1000");
}

TEST_CASE("loaded: the target execs another program in the middle of a session" * doctest::test_suite("loaded")) {
  Hogs hogs;
  auto rng = seeded();
  const std::string counter = fixture("counter");
  for (long round = 0; round < rounds(); ++round) {
    CAPTURE(round);
    // execer calls main.doWork ~1,000 times a second, and execs counter on
    // SIGUSR1: sent at a random moment once the breakpoint is being hit.
    Target t({fixture("execer"), "--on-usr1", counter, "--report"});
    Break b(t.pid, "main.doWork", {"-d", "120"});
    b.attached(t, 20);
    const long after = std::uniform_int_distribution<long>(0, 1'000'000)(rng);
    b.pumpFor(std::chrono::microseconds(after));
    REQUIRE(::kill(t.pid, SIGUSR1) == 0);
    const int status = b.g.wait(120s);
    INFO("goscope stderr: " << b.g.err());
    REQUIRE_MESSAGE(status != -1, "goscope did not end within 120 s of the exec");
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 8);
    CHECK(b.g.err().find("replaced its program during the session") != std::string::npos);
    REQUIRE(std::filesystem::read_symlink("/proc/" + std::to_string(t.pid) + "/exe") == counter);
    MESSAGE("round " << round << ": exec " << after / 1000 << " ms after the 20th hit, " << b.hits << " hits before it; "
                     << releaseLine(b.g.err()) << "; load " << loadAverage());
    // counter --report prints a line a second: checkLeftAlone's progress check.
    checkLeftAlone(t);
  }
}

TEST_CASE("loaded: the target SIGKILLed in the middle of a session is reaped, no dlv left" * doctest::test_suite("loaded")) {
  Hogs hogs;
  auto rng = seeded();
  for (long round = 0; round < rounds(); ++round) {
    CAPTURE(round);
    Target t({fixture("pacer"), "--rate", "1000"});
    Break b(t.pid, "main.scale");
    b.attached(t, 20);
    b.pumpFor(std::chrono::microseconds(std::uniform_int_distribution<long>(0, 1'000'000)(rng)));
    const char state = procState(t.pid);
    const auto t0 = Clock::now();
    REQUIRE(::kill(t.pid, SIGKILL) == 0);
    // Its parent (this test) can reap it: dlv, its tracer, let it go.
    const int st = t.reap(30s);
    const double reapedMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    REQUIRE_MESSAGE(st != -1, "the killed target was not reaped within 30 s (TracerPid " << tracerPid(t.pid) << ")");
    CHECK(WIFSIGNALED(st));
    const int gs = b.g.wait(60s);
    INFO("goscope stderr: " << b.g.err());
    REQUIRE_MESSAGE(gs != -1, "goscope did not end within 60 s of the target's death");
    // The session ends with the target: as its normal end (exit 0, "the
    // session ended with it") or, when the kill lands in a Delve request,
    // exit 8 "exited while goscope was working on it" (docs/errors.md).
    CHECK(WIFEXITED(gs));
    CHECK((WEXITSTATUS(gs) == 0 || WEXITSTATUS(gs) == 8));
    CHECK(b.g.err().find("PID " + std::to_string(t.pid) + " exited") != std::string::npos);
    const double endedMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    CHECK(waitUntil([&] { return dlvAttachedTo(t.pid).empty(); }, 10s));
    CHECK(waitUntil([&] { return goscopesFor(t.pid).empty(); }, 10s));
    MESSAGE("round " << round << ": state " << state << " at the kill; reaped after " << reapedMs << " ms, goscope ended after "
                     << endedMs << " ms; load " << loadAverage());
  }
}
