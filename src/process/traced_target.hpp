// The target of a tracing subcommand, as -p PID, -c 'CMD ARGS' or -b BINARY
// name it: which file the probes go into, which processes they fire in, and
// how to tell that the session is over because the target has gone.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "process/target_spec.hpp"
#include "binary/go_binary.hpp"
#include "process/process.hpp"
#include "util/launched_child.hpp"
#include "util/result.hpp"

namespace goscope {

// What planning left attached to a target for the session that follows (the
// rate probe's loaded BPF engine, its links still on: session/prepared_engine.hpp):
// defined by the api layer, opaque here. It goes with the target because its
// probes are in the target's process; released with the target when no
// session takes it.
struct PreparedPath;

class TracedTarget {
 public:
  // For -c the command is started but held before exec until release().
  static Result<TracedTarget> open(const TargetSpec& spec);

  const GoBinary& binary() const { return *binary_; }
  std::shared_ptr<GoBinary> binaryShared() const { return binary_; }
  // The running process (-p, and -c once released); nullptr for -b.
  const Process* process() const { return process_ ? &*process_ : nullptr; }
  // The path uprobes are attached through: the open file the analysis read
  // (/proc/self/fd/N, ElfFile::handlePath), never the path it was named
  // by again, which a rename or a symlink swap could point at another file.
  const std::string& attachPath() const { return attachPath_; }
  // The file's path as the user named it (-b, -c) or the kernel reports it
  // (-p): for labels and messages.
  const std::string& filePath() const { return filePath_; }
  // Ok while the target is the one analysed: for -p (and -c once
  // released), the pinned process (Process::verifyIdentity) running the
  // file read; for -b (and -c before release), the path still names that
  // file, unchanged. Else TargetGone saying what changed. Called
  // immediately before every attach.
  Result<void> checkIdentity() const;
  // The pid filter for attaching: the process for -p/-c, 0 (every process
  // running the file, including later ones) for -b.
  pid_t pidFilter() const { return pidFilter_; }
  bool isBinaryWide() const { return pidFilter_ == 0; }
  bool isLaunched() const { return child_.has_value(); }
  std::string describe() const;

  // -c: lets the command run (call after attaching). No-op otherwise.
  Result<void> release();
  // True when a -p/-c target has exited. -b never ends by itself.
  bool ended();
  // True when a -p target, or a -c command after its release, has exec'd
  // another program: the uprobes sit in the old file, so nothing more will
  // be counted (-b: false). (release() returns once the command's own exec
  // is done, so the program it was released as is the one compared.)
  bool execed() const;
  // After execed(): what the target runs now, for the message.
  std::string execedTo() const;
  std::optional<int> childExitStatus() { return child_ ? child_->poll() : std::nullopt; }
  // -c: the command's exit status once the session saw it end (ended()); none otherwise.
  std::optional<int> commandExitStatus() const { return child_ ? child_->exitStatus() : std::nullopt; }
  // Runtime address = link-time address + bias, for -p/-c (after release).
  Result<uint64_t> loadBias();
  // Set by api::plan, taken by the session the target is handed to.
  std::shared_ptr<PreparedPath>& prepared() { return prepared_; }

 private:
  std::shared_ptr<GoBinary> binary_;
  mutable std::string execedTo_;  // set by execed()
  std::optional<Process> process_;
  std::optional<LaunchedChild> child_;
  // -c through a wrapper: the Go program it started, held until release().
  std::optional<HeldExec> held_;
  std::string attachPath_;
  std::string filePath_;  // -b, -c: the path that must go on naming the file read
  std::string display_;
  pid_t pidFilter_ = 0;
  std::optional<uint64_t> bias_;
  // Last: destroyed first, so an engine planning left is detached while the
  // process and its pidfd are still held.
  std::shared_ptr<PreparedPath> prepared_;
};

}  // namespace goscope
