// /proc/PID/stat's fields counted after the command name, whatever the name
// holds: a child names itself with spaces and parentheses (prctl), and its
// state and code start are read past them.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/proc_stat.hpp"
#include "process/run_state.hpp"

using namespace goscope;

TEST_CASE("proc stat: fields counted after a command name with spaces and parentheses") {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::prctl(PR_SET_NAME, "a) b ) (c", 0, 0, 0);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  const auto own = readProcStat(::getpid());
  for (int i = 0; i < 100; i++) {  // until the child sleeps in pause()
    auto s = readProcStat(child);
    if (s && s->state() == 'S') break;
    ::usleep(10'000);
  }
  const auto stat = readProcStat(child);
  REQUIRE(stat);
  REQUIRE(own);
  CHECK(stat->state() == 'S');
  CHECK(stat->number(4) == static_cast<uint64_t>(::getpid()));  // ppid
  CHECK(stat->number(26) == own->number(26));                    // startcode: the same image (a fork)
  CHECK(stat->number(26) != 0);
  CHECK(stat->field(99).empty());
  CHECK(runStateOf(child) == RunState::Running);
  ::kill(child, SIGSTOP);
  for (int i = 0; i < 100 && runStateOf(child) != RunState::Stopped; i++) ::usleep(10'000);
  CHECK(runStateOf(child) == RunState::Stopped);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(!readProcStat(child));
  CHECK(runStateOf(child) == RunState::Gone);
}
