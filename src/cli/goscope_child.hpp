// One goscope subcommand run as a child process of goscope itself (`goscope
// mcp` serves each tool call this way). Its own process, so a call that
// fails, is cancelled or is killed never takes the server down with it, and
// it ends the way a user ends the command line: SIGINT, which detaches its
// probes and prints its results (the path every kill-safety test covers).
// The child gets SIGINT too if the thread that started it dies
// (PR_SET_PDEATHSIG). Owned: the destructor interrupts, then kills, and reaps.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope::cli {

class GoscopeChild {
 public:
  // Starts `goscope ARGS...` (this very executable, opened once at the
  // first call: a file replaced since is not what runs), stdin /dev/null,
  // stdout and stderr on pipes.
  static Result<GoscopeChild> start(const std::vector<std::string>& args);

  GoscopeChild(GoscopeChild&&) noexcept;
  GoscopeChild& operator=(GoscopeChild&&) = delete;
  ~GoscopeChild();

  pid_t pid() const { return pid_; }

  // Waits up to `wait` for output; appends the complete lines read from
  // stdout and stderr. False once both are closed (the child is done
  // writing; wait() then reaps it).
  bool pump(std::chrono::milliseconds wait, std::vector<std::string>& out, std::vector<std::string>& err);

  // SIGINT (the subcommand's Ctrl-C: detach, print what it has), SIGKILL.
  void interrupt();
  void kill();
  // Reaps it: the exit code, or 128+N when killed by signal N.
  int wait();

 private:
  GoscopeChild() = default;
  bool readFrom(UniqueFd& fd, std::string& partial, std::vector<std::string>& lines);
  pid_t pid_ = -1;
  UniqueFd out_, err_;
  std::string outPartial_, errPartial_;
  std::optional<int> status_;
};

}  // namespace goscope::cli
