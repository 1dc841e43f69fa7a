// A command goscope starts itself (`-c 'CMD ARGS'`): forked and held before
// exec, so probes can be attached to its PID before its first instruction,
// then released. Owned: when the owner goes away first, the child gets
// SIGTERM and is reaped, so no process of ours outlives goscope unawares.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/exec_follow.hpp"
#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope {

class LaunchedChild {
 public:
  // Splits `command` on whitespace (single and double quotes group words),
  // resolves argv[0] through PATH, forks; the child waits until release().
  // Errors: Usage (empty), NotFound (no such program).
  // stdoutToStderr keeps the child's output out of a JSON stream on stdout.
  static Result<LaunchedChild> start(const std::string& command, bool stdoutToStderr = false);

  LaunchedChild(LaunchedChild&&) noexcept;
  LaunchedChild& operator=(LaunchedChild&&) = delete;
  ~LaunchedChild();

  pid_t pid() const { return pid_; }
  const std::string& program() const { return program_; }  // absolute path that will be exec'd
  // Lets the child exec. Returns an error if the exec failed.
  Result<void> release();
  // A wrapper (a script, `sh -c`): lets it exec and follows it to the
  // first program `accept` takes, returned held in its exec stop
  // (util/exec_follow.hpp). The child stays the command whose status counts.
  Result<HeldExec> releaseFollowing(const std::function<bool(const std::string&)>& accept,
                                    std::chrono::milliseconds timeout);
  // True once release() let the child exec (or try to).
  bool released() const { return !go_.valid(); }
  // Non-blocking: the exit status once it has exited (reaps it).
  std::optional<int> poll();
  // The exit status poll() or wait() saw (128+N: killed by signal N); none while it runs.
  std::optional<int> exitStatus() const { return status_; }
  int wait();
  std::optional<int> waitFor(std::chrono::milliseconds timeout);
  // SIGINT, then SIGTERM, then SIGKILL, each after a grace period; reaps.
  int terminate();

 private:
  LaunchedChild() = default;
  pid_t pid_ = -1;
  std::string program_;
  UniqueFd go_;      // write end: one byte lets the child exec
  UniqueFd execOk_;  // read end, CLOEXEC in the child: EOF = exec succeeded
  std::optional<int> status_;
};

std::vector<std::string> splitCommand(const std::string& command);
// The command string splitCommand turns back into `words` exactly (each
// word quoted as needed): `goscope count main.add -- ./prog 'a b'`.
std::string joinCommand(const std::vector<std::string>& words);

// The absolute path exec would run for `name`: as given when it has a `/`,
// else the first executable regular file on $PATH. nullopt when none.
std::optional<std::string> resolveProgram(const std::string& name);

}  // namespace goscope
