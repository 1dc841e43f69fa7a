// Helpers shared by the runtime tests: where the fixtures are, running a
// command and capturing its output, and starting a fixture as a child process
// that is always killed when the test ends.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace goscope::test {

inline const std::vector<std::string> kVariants = {"default", "stripped", "pie", "nopt"};

// ${build}/fixtures/<variant>/<name>
std::string fixture(const std::string& name, const std::string& variant = "default");
// Where things are in this build: only run.cpp is compiled with the paths
// (a definition on every test file made each worktree's build recompile all
// of them: no ccache hit across worktrees).
std::string fixtureDir();   // ${build}/fixtures
std::string sourceDir();    // the repository root
std::string cliPath();      // the built goscope binary
std::string examplesDir();  // the built examples/ programs

struct CommandResult {
  int exitCode = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs `sh -c cmd`, capturing stdout and stderr separately.
CommandResult run(const std::string& cmd);
// Runs the goscope CLI with the given argument string.
CommandResult runCli(const std::string& args);
// The same with ptrace(2) refused to goscope and everything it starts (exit
// 126 if the refusal could not be set up).
CommandResult runCliWithoutPtrace(const std::string& args);

std::vector<std::string> splitLines(const std::string& s);

// A child process (a fixture) killed with SIGKILL and reaped on destruction.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv, bool captureStdout = false);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  bool alive();
  // Waits up to timeoutMs for the child to exit by itself; its wait status
  // (WIFEXITED...), or -1 if it still runs.
  int waitExit(int timeoutMs);
  // Reads one line of the child's stdout (captureStdout only); waits up to timeoutMs.
  bool readLine(std::string& line, int timeoutMs);

 private:
  pid_t pid_ = -1;
  int status_ = -1;  // the wait status, once reaped
  int outFd_ = -1;
  std::string buf_;
};

// goscope with `args`, its stdout and stderr on the given fds, stdin from
// /dev/null; not waited for. -1 when fork fails.
// ownProcessGroup: goscope leads a process group of its own (to kill that group).
pid_t spawnCli(const std::vector<std::string>& args, int outFd, int errFd, bool ownProcessGroup = false);

// A copy of a file (a fixture, a tool) in a directory of its own, removed
// on destruction. Uprobes belong to the file: a test that probes with pid 0
// (-b) probes its own copy, or it counts every other test's process that
// runs the same binary, and slows them.
class PrivateCopy {
 public:
  explicit PrivateCopy(const std::string& file);
  ~PrivateCopy();
  PrivateCopy(const PrivateCopy&) = delete;
  PrivateCopy& operator=(const PrivateCopy&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// A whole file, "" when unreadable.
std::string slurpFile(const std::string& path);

// The CPU time of a process, all its threads, in seconds (its CPU clock;
// /proc/PID/stat's clock ticks if that cannot be read); -1 when unreadable.
double cpuSeconds(pid_t pid);

// Every thread of `pid` (and so the threads they start) allowed on `cpu`
// only; false if a thread could not be moved.
bool pinToCpu(pid_t pid, int cpu);

// Polls `cond` every 10 ms until it holds (true) or `timeout` passed (false).
bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

}  // namespace goscope::test
