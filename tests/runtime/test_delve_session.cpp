// DelveSession with the real dlv 1.20.2 against the counter fixture. Every
// test ends by checking that the fixture still runs at speed, that no int3 is
// left in its code (its memory equals the ELF file's bytes) and that no dlv
// is left (tests/support/unharmed.hpp); the fixture is killed at the end
// (test::Child).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "backend/delve/delve_session.hpp"
#include "backend/delve/pending_signals.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::delve;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Shared with the CLI tests (tests/support/unharmed.hpp).
using test::alive;
using test::checkUnharmed;
using test::Counter;
using test::readMem;
using test::waitGone;

std::unique_ptr<DelveSession> attachOrFail(pid_t pid) {
  auto s = DelveSession::attach(pid);
  REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message + " / " + s.error().hint));
  return std::move(*s);
}

}  // namespace

TEST_CASE("delve: eval of main.counter returns an int64 that grows") {
  Counter c;
  double before = c.rate();
  pid_t dlv;
  {
    auto s = attachOrFail(c.pid());
    dlv = s->dlvPid();
    CHECK(s->state() == SessionState::Stopped);
    auto v1 = s->eval("main.counter");
    REQUIRE_MESSAGE(v1.has_value(), (v1 ? "" : v1.error().message));
    CHECK(v1->type == "int64");
    int64_t a = std::stoll(v1->value);
    CHECK(a == c.value());  // stopped: the same as its memory
    REQUIRE(s->resume());
    CHECK(s->state() == SessionState::Running);
    CHECK_FALSE(s->eval("main.counter"));  // refused while running: it would wedge dlv
    std::this_thread::sleep_for(100ms);
    REQUIRE(s->halt());
    CHECK(s->state() == SessionState::Stopped);
    auto v2 = s->eval("main.counter");
    REQUIRE(v2);
    CHECK(std::stoll(v2->value) > a);
    REQUIRE(s->detach());
    CHECK(s->state() == SessionState::Detached);
    CHECK(s->detach());  // twice is fine
    auto t = s->timings();
    MESSAGE("attach " << t.attachMs << " ms (port after " << t.listenMs << " ms), detach " << t.detachMs
                      << " ms, target stopped " << t.stoppedMs << " ms");
  }
  CHECK_FALSE(alive(dlv));
  checkUnharmed(c, before);
}

TEST_CASE("delve: a one-off read end to end (attach, eval, detach)") {
  Counter c;
  double before = c.rate();
  auto t0 = Clock::now();
  auto s = attachOrFail(c.pid());
  auto v = s->eval("main.counter");
  REQUIRE(v);
  REQUIRE(s->detach());
  double total = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  auto t = s->timings();
  MESSAGE("one-off read: " << total << " ms end to end; attach " << t.attachMs << " ms, detach " << t.detachMs
                           << " ms, target stopped <= " << t.stoppedMs << " ms");
  CHECK_FALSE(alive(s->dlvPid()));
  checkUnharmed(c, before);
}

TEST_CASE("delve: a breakpoint on main.doWork is hit and captured") {
  Counter c;
  double before = c.rate();
  std::vector<uint64_t> addrs;
  {
    auto s = attachOrFail(c.pid());
    BreakpointSpec spec;
    spec.location = "main.doWork";
    spec.variables = {"main.counter"};
    spec.stackDepth = 2;
    spec.goroutine = true;
    auto bp = s->createBreakpoint(spec);
    REQUIRE_MESSAGE(bp.has_value(), (bp ? "" : bp.error().message));
    addrs = bp->addrs;
    REQUIRE_FALSE(addrs.empty());
    CHECK(readMem(c.pid(), addrs[0], 1).at(0) == 0xCC);  // inserted
    for (int round = 0; round < 3; ++round) {
      auto ev = s->continueToBreakpoint(5s);
      REQUIRE_MESSAGE(ev.has_value(), (ev ? "" : ev.error().message));
      CHECK_FALSE(ev->timedOut);
      REQUIRE(ev->hits.size() >= 1);
      const auto& h = ev->hits[0];
      CHECK(h.breakpointId == bp->id);
      CHECK(h.function == "main.doWork");
      REQUIRE(h.captured.variables.size() == 1);
      CHECK(h.captured.variables[0].name == "main.counter");
      CHECK(std::stoll(h.captured.variables[0].value) > 0);
      CHECK(h.captured.stacktrace.size() == 3);  // depth 2: doWork + 2 callers
      CHECK(h.captured.goroutine.has_value());
    }
    auto ours = s->breakpoints();
    REQUIRE(ours);
    CHECK(ours->size() == 1);
    REQUIRE(s->clearBreakpoint(bp->id));
    CHECK(c.addrIntact(addrs[0]));
    REQUIRE(s->resume());
    REQUIRE(s->detach());
  }
  checkUnharmed(c, before, addrs);
}

TEST_CASE("delve: detach with a breakpoint still set removes it") {
  Counter c;
  double before = c.rate();
  std::vector<uint64_t> addrs;
  {
    auto s = attachOrFail(c.pid());
    auto bp = s->createBreakpoint({.location = "main.doWork"});
    REQUIRE(bp);
    addrs = bp->addrs;
    auto ev = s->continueToBreakpoint(5s);
    REQUIRE(ev);
    REQUIRE_FALSE(ev->hits.empty());
    // leave it set and stopped on it: detach must clean up
    REQUIRE(s->detach());
  }
  checkUnharmed(c, before, addrs);
}

TEST_CASE("delve: a conditional breakpoint that never matches times out and halts") {
  Counter c;
  double before = c.rate();
  std::vector<uint64_t> addrs;
  {
    auto s = attachOrFail(c.pid());
    auto bp = s->createBreakpoint({.location = "main.doWork", .cond = "main.counter < 0"});
    REQUIRE(bp);
    addrs = bp->addrs;
    auto ev = s->continueToBreakpoint(500ms);
    REQUIRE_MESSAGE(ev.has_value(), (ev ? "" : ev.error().message));
    CHECK(ev->timedOut);
    CHECK(ev->hits.empty());
    CHECK(s->state() == SessionState::Stopped);
    REQUIRE(s->resume());  // detach from running, with the breakpoint trapping constantly
    std::this_thread::sleep_for(200ms);
    REQUIRE(s->detach());
  }
  checkUnharmed(c, before, addrs);
}

TEST_CASE("delve: halt is never sent to a stopped target") {
  Counter c;
  double before = c.rate();
  {
    auto s = attachOrFail(c.pid());
    REQUIRE(s->halt());  // stopped after attach: no-ops
    REQUIRE(s->halt());
    auto pending = sigtrapPending(c.pid());
    REQUIRE(pending);
    CHECK_FALSE(*pending);
    REQUIRE(s->detach());
  }
  checkUnharmed(c, before);
}

TEST_CASE("delve: a SIGTRAP left pending by a halt that crossed a stop is drained before detach") {
  Counter c;
  double before = c.rate();
  {
    auto s = attachOrFail(c.pid());
    // What Delve's halt does to a target that stopped a moment earlier: without
    // the drain, Detach hands this signal to the target, which dies of it.
    ::kill(c.pid(), SIGTRAP);
    auto pending = sigtrapPending(c.pid());
    REQUIRE(pending);
    REQUIRE(*pending);
    REQUIRE(s->detach());
  }
  std::this_thread::sleep_for(500ms);
  checkUnharmed(c, before);
}

// dlv's own shutdown is the last resort (when the guardian is gone too):
// clean while no breakpoint is being hit. With a conditional breakpoint on a
// hot function it killed the target in 6 of 8 runs (its halt crossed its
// internal stops), which is why goscope's death goes through the guardian.
TEST_CASE("delve: dlv's own SIGTERM shutdown is clean while no breakpoint is being hit") {
  Counter c;
  double before = c.rate();
  std::vector<uint64_t> addrs;
  pid_t dlv;
  {
    auto s = attachOrFail(c.pid());
    dlv = s->dlvPid();
    auto bp = s->createBreakpoint({.location = "main.doWork"});
    REQUIRE(bp);
    addrs = bp->addrs;
    SUBCASE("stopped at a breakpoint") {
      auto ev = s->continueToBreakpoint(5s);
      REQUIRE(ev);
      REQUIRE_FALSE(ev->hits.empty());
    }
    SUBCASE("running with a breakpoint that is rarely hit") {
      REQUIRE(s->clearBreakpoint(bp->id));
      auto rare = s->createBreakpoint({.location = "main.main"});  // never called again
      REQUIRE(rare);
      addrs = rare->addrs;
      REQUIRE(s->resume());
      std::this_thread::sleep_for(200ms);
    }
    CHECK(readMem(c.pid(), addrs[0], 1).at(0) == 0xCC);
    ::kill(dlv, SIGTERM);
    CHECK(waitGone(dlv, 5s));
    CHECK_FALSE(s->halt());  // the session notices
    CHECK(s->state() == SessionState::Dead);
    CHECK(s->detach());
  }
  checkUnharmed(c, before, addrs);
}

TEST_CASE("delve: the guardian SIGKILLed: dlv dies with it, its sentinel lets the target go") {
  Counter c;
  double before = c.rate();
  pid_t dlv, guardian;
  {
    auto s = attachOrFail(c.pid());
    dlv = s->dlvPid();
    guardian = s->guardianPid();
    REQUIRE(guardian > 0);
    ::kill(guardian, SIGKILL);  // dlv's parent-death signal (SIGKILL) fires; the sentinel holds its tracer thread
    CHECK(waitGone(dlv, 5s));
    CHECK_FALSE(s->eval("main.counter"));
    CHECK(s->state() == SessionState::Dead);
    CHECK(s->detach());
  }
  checkUnharmed(c, before);
}

namespace {

enum class KillWhile {
  Attached,               // target stopped, no breakpoint
  StoppedAtBreakpoint,    // stopped on main.doWork
  RunningWithBreakpoint,  // a condition that is never true on main.doWork: it traps all the time
  BreakLoop,              // continueToBreakpoint in a loop, as `goscope break` does
};

// Runs a session in a forked child, SIGKILLs the child at the given point:
// dlv gets SIGTERM from PR_SET_PDEATHSIG (and sees its client disconnect).
void killGoscopeWhile(KillWhile when) {
  Counter c;
  double before = c.rate();
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    uint64_t report[3] = {0, 0, 0};  // dlv pid, breakpoint address, guardian pid
    auto s = DelveSession::attach(c.pid());
    if (!s) ::_exit(1);
    report[0] = static_cast<uint64_t>((*s)->dlvPid());
    report[2] = static_cast<uint64_t>((*s)->guardianPid());
    if (when != KillWhile::Attached) {
      BreakpointSpec spec{.location = "main.doWork"};
      if (when == KillWhile::RunningWithBreakpoint) spec.cond = "main.counter < 0";
      auto bp = (*s)->createBreakpoint(spec);
      if (!bp) ::_exit(2);
      report[1] = bp->addr;
      if (when == KillWhile::StoppedAtBreakpoint) {
        auto ev = (*s)->continueToBreakpoint(5s);
        if (!ev || ev->hits.empty()) ::_exit(3);
      } else if (!(*s)->resume()) {
        ::_exit(4);
      }
    }
    (void)!::write(fds[1], report, sizeof report);
    if (when == KillWhile::BreakLoop) {
      for (;;)  // SIGKILLed somewhere in here
        if (!(*s)->continueToBreakpoint(5s)) ::_exit(5);
    }
    for (;;) ::pause();  // SIGKILLed here, the session never detaches
  }
  ::close(fds[1]);
  uint64_t report[3] = {0, 0, 0};
  ssize_t n = ::read(fds[0], report, sizeof report);
  ::close(fds[0]);
  REQUIRE(n == sizeof report);
  pid_t dlv = static_cast<pid_t>(report[0]), guardian = static_cast<pid_t>(report[2]);
  if (report[1] && when == KillWhile::StoppedAtBreakpoint) CHECK(readMem(c.pid(), report[1], 1).at(0) == 0xCC);
  std::this_thread::sleep_for(when == KillWhile::BreakLoop ? 700ms : 200ms);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto t0 = Clock::now();
  CHECK_MESSAGE(waitGone(dlv, 20s), "dlv is still running");
  CHECK_MESSAGE(waitGone(guardian, 20s), "the guardian is still running");
  MESSAGE("dlv gone " << std::chrono::duration<double, std::milli>(Clock::now() - t0).count()
                      << " ms after goscope was SIGKILLed");
  std::this_thread::sleep_for(300ms);
  std::vector<uint64_t> addrs;
  if (report[1]) addrs.push_back(report[1]);
  checkUnharmed(c, before, addrs);
}

}  // namespace

TEST_CASE("delve: goscope SIGKILLed while attached (target stopped)") { killGoscopeWhile(KillWhile::Attached); }
TEST_CASE("delve: goscope SIGKILLed while stopped at a breakpoint") { killGoscopeWhile(KillWhile::StoppedAtBreakpoint); }
TEST_CASE("delve: goscope SIGKILLed while running with a breakpoint trapping all the time") {
  for (int round = 0; round < 4; ++round) killGoscopeWhile(KillWhile::RunningWithBreakpoint);  // it was racy
}
TEST_CASE("delve: goscope SIGKILLed in a loop of breakpoint hits") {
  for (int round = 0; round < 3; ++round) killGoscopeWhile(KillWhile::BreakLoop);
}

TEST_CASE("delve: interrupt() ends a wait for a breakpoint — detach still cleans up") {
  Counter c;
  double before = c.rate();
  std::vector<uint64_t> addrs;
  {
    auto s = attachOrFail(c.pid());
    auto bp = s->createBreakpoint({.location = "main.doWork", .cond = "main.counter < 0"});
    REQUIRE(bp);
    addrs = bp->addrs;
    std::thread t([&] {
      std::this_thread::sleep_for(200ms);
      s->interrupt();  // what a SIGINT handler would call
    });
    auto t0 = Clock::now();
    auto ev = s->continueToBreakpoint(10s);
    t.join();
    CHECK_FALSE(ev);
    CHECK(Clock::now() - t0 < 3s);
    CHECK(s->state() == SessionState::Running);
    REQUIRE(s->detach());
  }
  checkUnharmed(c, before, addrs);
}

TEST_CASE("delve: errors Delve reports become one-line errors") {
  Counter c;
  double before = c.rate();
  {
    auto s = attachOrFail(c.pid());
    auto unknown = s->eval("main.nosuch");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().kind == ErrorKind::NoMatch);
    auto syntax = s->eval("main.counter +");
    REQUIRE_FALSE(syntax);
    CHECK(syntax.error().kind == ErrorKind::Usage);
    auto nofn = s->createBreakpoint({.location = "main.nosuch"});
    REQUIRE_FALSE(nofn);
    CHECK(nofn.error().kind == ErrorKind::NoMatch);
    CHECK(s->state() == SessionState::Stopped);  // still usable
    REQUIRE(s->set("main.counter", "7"));
    auto v = s->eval("main.counter");
    REQUIRE(v);
    CHECK(v->value == "7");
    REQUIRE(s->detach());
  }
  checkUnharmed(c, before);
}

TEST_CASE("delve: attach failures are one-line errors with hints") {
  SUBCASE("a stripped binary") {
    test::Child stripped({test::fixture("counter", "stripped")});
    std::this_thread::sleep_for(200ms);
    auto s = DelveSession::attach(stripped.pid());
    REQUIRE_FALSE(s);
    CHECK(s.error().kind == ErrorKind::BadTarget);
    CHECK(s.error().hint.find("BPF") != std::string::npos);
    CHECK(s.error().message.find('\n') == std::string::npos);
    CHECK(stripped.alive());
  }
  SUBCASE("no such process") {
    auto s = DelveSession::attach(999999);
    REQUIRE_FALSE(s);
    CHECK(s.error().kind == ErrorKind::NotFound);
  }
  SUBCASE("dlv missing") {
    Counter c;
    auto s = DelveSession::attach(c.pid(), {.dlvPath = "/nonexistent/dlv"});
    REQUIRE_FALSE(s);
    CHECK(s.error().kind == ErrorKind::External);
    CHECK(s.error().hint.find("apt-get install delve") != std::string::npos);
  }
  SUBCASE("multiclient is refused") {
    Counter c;
    auto s = DelveSession::attach(c.pid(), {.extraArgs = {"--accept-multiclient"}});
    REQUIRE_FALSE(s);
    CHECK(s.error().kind == ErrorKind::Usage);
  }
}

TEST_CASE("delve: the target exiting during the session is TargetGone") {
  test::Child shortLived({test::fixture("counter"), "--duration", "2"});
  std::this_thread::sleep_for(200ms);
  auto s = attachOrFail(shortLived.pid());
  pid_t dlv = s->dlvPid();
  auto ev = s->continueToBreakpoint(10s);
  REQUIRE_FALSE(ev);
  CHECK(ev.error().kind == ErrorKind::TargetGone);
  CHECK(s->state() == SessionState::Dead);
  CHECK(s->detach());
  CHECK(waitGone(dlv, 5s));
}
