// `goscope read` on the zero-pause direct path spawns nothing and stops
// nothing (issue #14: it ran `dlv version` for facts the plan never used),
// and a package variable the binary shows does not exist is refused at once,
// before Delve is started or the target stopped (issue #17: it attached
// Delve and stopped the target ~0.5 s before saying so).
//
// How "spawns nothing" is seen without optional tools: goscope runs as a
// ptrace tracee of the test (PTRACE_O_TRACEFORK/VFORK/CLONE), which is told
// of every process it creates (fork, vfork, posix_spawn, popen) - including
// ones that exit at once. How "stops nothing" is seen: a thread polls the
// target's state letter in /proc/PID/stat while goscope runs; a ptrace stop
// shows as 't'. Both are checked to see what they should on a Delve read.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

struct Observed {
  int exitCode = -1;
  std::string out, err;
  int processesCreated = 0;  // by goscope or any process it created
  bool targetStopped = false;  // the target was seen in state t or T while goscope ran
};

std::string drain(int fd) {
  std::string s;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
  return s;
}

pid_t tgidOf(pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Tgid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
  return -1;
}

// Runs goscope ARGS as a ptrace tracee, counting the processes it creates
// (a new process is counted, then detached and left to run untraced), while
// watching `target`'s state.
Observed observeCli(const std::vector<std::string>& args, pid_t target) {
  Observed o;
  char outPath[] = "/tmp/goscope-read-direct-out.XXXXXX";
  char errPath[] = "/tmp/goscope-read-direct-err.XXXXXX";
  int outFd = ::mkstemp(outPath), errFd = ::mkstemp(errPath);
  REQUIRE(outFd >= 0);
  REQUIRE(errFd >= 0);
  ::unlink(outPath);
  ::unlink(errPath);

  std::atomic<bool> done{false}, stopped{false};
  std::thread watch([&] {
    while (!done) {
      char s = procState(target);
      if (s == 't' || s == 'T') stopped = true;
      std::this_thread::sleep_for(1ms);
    }
  });

  std::vector<std::string> argv{cliPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(outFd, 1);
    ::dup2(errFd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  REQUIRE(pid > 0);
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);  // the SIGTRAP of its exec
  REQUIRE(WIFSTOPPED(st));
  ::ptrace(PTRACE_SETOPTIONS, pid, nullptr,
           reinterpret_cast<void*>(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
                                   PTRACE_O_EXITKILL));
  ::ptrace(PTRACE_CONT, pid, nullptr, nullptr);

  // A new task's first stop (ptrace's SIGSTOP) and its creator's event come
  // in either order.
  std::set<pid_t> threads{pid};  // goscope's own, traced
  std::set<pid_t> started;       // new threads already past their first stop
  std::set<pid_t> pending;       // new threads whose first stop is still to come
  std::set<pid_t> processes;     // created processes (detached at their first stop)
  std::set<pid_t> detached;
  auto newProcess = [&](pid_t c) {
    if (processes.insert(c).second) ++o.processesCreated;
  };
  while (!threads.empty()) {
    pid_t w = ::waitpid(-1, &st, __WALL);
    if (w < 0) break;
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      if (w == pid) o.exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      threads.erase(w);
      continue;
    }
    if (!WIFSTOPPED(st)) continue;
    const int sig = WSTOPSIG(st), event = st >> 16;
    if (!threads.count(w)) {  // a new task's first stop
      if (tgidOf(w) == pid) {
        threads.insert(w);
        if (!pending.erase(w)) started.insert(w);
        ::ptrace(PTRACE_CONT, w, nullptr, nullptr);
      } else {
        newProcess(w);
        detached.insert(w);
        ::ptrace(PTRACE_DETACH, w, nullptr, nullptr);
      }
      continue;
    }
    if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE) {
      unsigned long child = 0;
      ::ptrace(PTRACE_GETEVENTMSG, w, nullptr, &child);
      const pid_t c = static_cast<pid_t>(child);
      if (event == PTRACE_EVENT_CLONE && tgidOf(c) == pid) {
        if (!started.erase(c)) pending.insert(c);
      } else {
        newProcess(c);
      }
      ::ptrace(PTRACE_CONT, w, nullptr, nullptr);
      continue;
    }
    // goscope's own signals go on to it; ptrace's traps do not.
    const int deliver = event == 0 && sig != SIGTRAP ? sig : 0;
    ::ptrace(PTRACE_CONT, w, nullptr, reinterpret_cast<void*>(static_cast<long>(deliver)));
  }
  done = true;
  watch.join();
  o.targetStopped = stopped;
  ::lseek(outFd, 0, SEEK_SET);
  ::lseek(errFd, 0, SEEK_SET);
  o.out = drain(outFd);
  o.err = drain(errFd);
  ::close(outFd);
  ::close(errFd);
  return o;
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("read direct: a direct read spawns no process and never stops the target, a Delve read does both") {
  Counter c;
  const std::string p = std::to_string(c.pid());

  auto direct = observeCli({"read", "--explain", "-p", p, "main.counter"}, c.pid());
  INFO("stderr: " << direct.err);
  REQUIRE(direct.exitCode == 0);
  CHECK(has(direct.err, "plan: direct-read"));
  CHECK(has(direct.err, "was not stopped: read directly from its memory"));
  CHECK(has(direct.out, "main.counter = "));
  CHECK(direct.processesCreated == 0);
  CHECK_FALSE(direct.targetStopped);

  // The same watch on the Delve path sees dlv started and the target stopped.
  auto delve = observeCli({"read", "--strategy", "delve", "-p", p, "main.counter"}, c.pid());
  INFO("stderr: " << delve.err);
  REQUIRE(delve.exitCode == 0);
  CHECK(has(delve.err, "was stopped"));
  CHECK(delve.processesCreated >= 1);
  CHECK(delve.targetStopped);
  CHECK(waitUntraced(c.pid(), 20s));
}

TEST_CASE("read direct: every type the zoo's direct reads cover, without a process") {
  Child zoo({fixture("zoo")}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 5000));
  REQUIRE(ready == "ready");
  auto o = observeCli({"read", "--explain", "-p", std::to_string(zoo.pid()), "main.items", "main.primary"}, zoo.pid());
  INFO("stderr: " << o.err);
  REQUIRE(o.exitCode == 0);
  CHECK(has(o.err, "plan: direct-read"));
  CHECK(has(o.out, "main.items = "));
  CHECK(has(o.out, "main.primary = "));
  CHECK(o.processesCreated == 0);
  CHECK_FALSE(o.targetStopped);
}

TEST_CASE("read direct: a package variable DWARF shows does not exist is refused at once, nothing started or stopped") {
  Counter c;
  const std::string p = std::to_string(c.pid());
  for (const std::vector<std::string>& exprs :
       {std::vector<std::string>{"main.nosuch"}, {"main.counter", "main.nosuch"}, {"main.nosuch.Field"}, {"len(main.nosuch)"}}) {
    for (const std::string strategy : {"auto", "delve"}) {
      std::vector<std::string> args{"read", "--strategy", strategy, "-p", p};
      args.insert(args.end(), exprs.begin(), exprs.end());
      auto o = observeCli(args, c.pid());
      CAPTURE(strategy);
      CAPTURE(exprs.back());
      INFO("stderr: " << o.err);
      CHECK(o.exitCode == 5);  // docs/errors.md: NoMatch
      CHECK(has(o.err, "read: no package variable main.nosuch in "));
      CHECK(has(o.err, fixture("counter")));
      CHECK(o.out.empty());
      CHECK(o.processesCreated == 0);
      CHECK_FALSE(o.targetStopped);
    }
  }
  // A name the binary has under another kind, or that may be a local of
  // the stopped goroutine, is still Delve's to evaluate.
  auto fn = runCli("read -p " + p + " main.doWork");
  INFO(fn.err);
  CHECK_FALSE(has(fn.err, "no package variable"));
  auto local = runCli("read -p " + p + " nosuch");
  INFO(local.err);
  CHECK_FALSE(has(local.err, "no package variable"));
  CHECK(waitUntraced(c.pid(), 20s));
}

TEST_CASE("read direct: a field DWARF shows a struct does not have is refused at once, also behind a pointer") {
  Child z({fixture("zoo")}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(z.readLine(ready, 5000));
  REQUIRE(ready == "ready");
  const std::string p = std::to_string(z.pid());
  for (const auto& [expr, owner] : std::vector<std::pair<std::string, std::string>>{
           {"main.cfg.Nope", "main.cfg (main.Config)"}, {"main.primary.Nope", "main.primary (*main.Server)"},
           {"len(main.cfg.Nope)", "main.cfg (main.Config)"}}) {
    auto o = observeCli({"read", "-p", p, expr}, z.pid());
    CAPTURE(expr);
    INFO("stderr: " << o.err);
    CHECK(o.exitCode == 5);  // docs/errors.md: NoMatch
    CHECK(has(o.err, "read: " + owner + " has no field Nope in "));
    CHECK(o.out.empty());
    CHECK(o.processesCreated == 0);
    CHECK_FALSE(o.targetStopped);
  }
  // A field that exists behind a pointer is still Delve's to follow.
  auto ok = runCli("read -p " + p + " main.primary.Name");
  INFO(ok.err);
  CHECK(ok.out == "main.primary.Name = \"zoo\" (string)\n");
  CHECK(waitUntraced(z.pid(), 20s));
}

// A runtime whose map layout goscope does not know: the zoo with one field
// of runtime.hmap renamed in its DWARF (oldbuckets -> oldbuckeTs, the
// program itself untouched). goscope lays out a map only from field names it
// knows (docs/go-runtime.md, "Maps"); anything else is refused with the
// reason, never guessed, and auto hands it to Delve, which fails on that
// layout too (a panic inside it): exit 7 with Delve's message, the target
// untraced and running.
TEST_CASE("read direct: a map layout goscope does not know is refused with the reason, and auto hands it to Delve") {
  const std::string dir = "/tmp/goscope-unknown-layout-" + std::to_string(::getpid());
  const std::string bin = dir + "/zoo";
  REQUIRE(run("rm -rf " + dir + " && mkdir -p " + dir).exitCode == 0);
  auto decompressed = run("objcopy --decompress-debug-sections " + fixture("zoo") + " " + bin + " && objcopy --dump-section .debug_info=" +
                          dir + "/info " + bin);
  REQUIRE_MESSAGE(decompressed.exitCode == 0, decompressed.err);
  std::string info = slurpFile(dir + "/info");
  const std::string from("oldbuckets\0", 11), to("oldbuckeTs\0", 11);
  size_t renamed = 0;
  for (size_t at = 0; (at = info.find(from, at)) != std::string::npos; at += from.size(), renamed++) info.replace(at, from.size(), to);
  REQUIRE(renamed > 0);
  {
    std::ofstream out(dir + "/info", std::ios::binary | std::ios::trunc);
    out << info;
  }
  auto patched = run("objcopy --update-section .debug_info=" + dir + "/info " + bin);
  REQUIRE_MESSAGE(patched.exitCode == 0, patched.err);

  Child zoo({bin}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 5000));
  REQUIRE(ready == "ready");
  const std::string pid = std::to_string(zoo.pid());
  const std::string reason =
      "main.labels: it holds a map (map[string]int): its runtime header (hash<string,int>) has neither count/B/buckets/oldbuckets nor "
      "used/dirPtr/dirLen: a map layout goscope does not know";

  // Auto: the plan is Delve's, and --explain says why.
  auto o = observeCli({"read", "--explain", "-p", pid, "main.labels"}, zoo.pid());
  INFO("stderr: " << o.err);
  CHECK(has(o.err, "plan: delve"));
  CHECK(has(o.err, reason));
  CHECK(o.exitCode == 7);  // docs/errors.md: Delve failed
  CHECK(has(o.err, "main.labels: Delve Eval: Internal debugger error"));
  CHECK(o.out.empty());
  CHECK(waitUntraced(zoo.pid(), 20s));

  // A variable of a kind goscope knows is still read directly on it.
  auto plain = observeCli({"read", "--explain", "-p", pid, "main.primary"}, zoo.pid());
  INFO("stderr: " << plain.err);
  CHECK(plain.exitCode == 0);
  CHECK(has(plain.err, "plan: direct-read"));
  CHECK_FALSE(plain.targetStopped);
  CHECK(alive(zoo.pid()));
  run("rm -rf " + dir);
}
