#include "process/traced_target.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "process/target.hpp"

namespace goscope {

namespace {

// How long a wrapper may take to run its Go program.
constexpr std::chrono::milliseconds kWrapperTimeout{10000};

// The file is not a Go program at all (not ELF, or no pclntab): for -c, a
// wrapper to follow.
bool notGo(const Error& e) {
  return e.kind == ErrorKind::BadTarget && (e.message.find("not a Go program") != std::string::npos ||
                                            e.message.find("not an ELF file") != std::string::npos);
}

}  // namespace

Result<TracedTarget> TracedTarget::open(const TargetSpec& spec) {
  int given = spec.pid.has_value() + spec.command.has_value() + spec.binary.has_value();
  if (given != 1) return fail(ErrorKind::Usage, "give exactly one target: -p PID, -c 'CMD ARGS' or -b BINARY");
  TracedTarget t;
  if (spec.pid) {
    auto target = openProcessTarget(*spec.pid);
    if (!target) return target.failure();
    t.display_ = target->describe();
    t.binary_ = target->binary;
    t.bias_ = target->loadBias;
    t.process_ = std::move(target->process);
    t.attachPath_ = t.binary_->elf().handlePath();
    t.filePath_ = t.process_->exePath();
    t.pidFilter_ = *spec.pid;
  } else if (spec.binary) {
    auto target = openBinaryTarget(*spec.binary);  // (explains a path only a container has)
    if (!target) return target.failure();
    t.binary_ = target->binary;
    t.attachPath_ = t.binary_->elf().handlePath();
    t.filePath_ = *spec.binary;
    t.display_ = *spec.binary;
  } else {
    auto child = LaunchedChild::start(*spec.command, spec.commandStdoutToStderr);
    if (!child) return child.failure();
    auto b = GoBinary::open(child->program());
    pid_t pid = child->pid();
    std::string program = child->program();
    if (!b && notGo(b.error())) {
      // A wrapper (a script, sh -c, env): followed to the Go program it
      // runs, which is held before its first instruction (docs/reliability.md).
      auto held = child->releaseFollowing([](const std::string& exe) {
        auto g = GoBinary::open(exe);
        return g || !notGo(g.error());  // a Go program goscope cannot read is the one meant: its error is said
      }, kWrapperTimeout);
      if (!held)
        return fail(held.error().kind, program + " is not a Go program, and following it: " + held.error().message,
                    "-c wants a Go program, or a script or sh -c that runs one within " +
                        std::to_string(kWrapperTimeout.count() / 1000) + " s");
      b = GoBinary::open(held->exe());
      pid = held->pid();
      program = held->exe();
      t.held_.emplace(std::move(*held));
    }
    if (!b) return b.failure();  // the held child gets EOF and exits when `child` dies
    if (auto d = (*b)->attachDebugInfo(debugInfoSearch(), directoryOf(child->program())); !d) return d.failure();
    t.binary_ = *b;
    t.attachPath_ = t.binary_->elf().handlePath();
    t.filePath_ = program;
    t.pidFilter_ = pid;
    t.display_ = "PID " + std::to_string(pid) + " (" + program + ")";
    if (t.held_) t.display_ += ", run by " + child->program();
    t.child_.emplace(std::move(*child));
  }
  return t;
}

std::string TracedTarget::describe() const { return display_; }

Result<void> TracedTarget::checkIdentity() const {
  const FileIdentity& read = binary_->elf().identity();
  if (process_) return process_->verifyIdentity("before the probes were attached", &read);
  if (held_) return {};  // a wrapper's Go program, stopped at its exec of the file read (exec_follow.hpp)
  // The path (a -b binary, or the program a -c command is about to exec)
  // must still name the very file read, unchanged.
  struct stat now{};
  std::string change;
  if (::stat(filePath_.c_str(), &now) != 0) change = std::string("it is gone (") + std::strerror(errno) + ")";
  else change = describeChange(read, FileIdentity::of(now));
  if (change.empty()) return {};
  return fail(ErrorKind::TargetGone,
              filePath_ + " changed on disk while goscope analysed it: " + change + "; nothing was attached",
              "run goscope again to probe the file now at " + filePath_);
}

Result<void> TracedTarget::release() {
  if (!child_) return {};
  if (!held_) {
    // The command itself is held in its exec stop too, as a wrapper's
    // program is: its memory map is read there, before its first
    // instruction, because a short program can exit before it could be read
    // after, leaving a PIE's events without the load address that names
    // their types and stack frames. Where ptrace is refused, it is let go
    // unheld and the bias is taken from the events (bpf_event_session.cpp).
    auto held = child_->releaseFollowing([](const std::string&) { return true; }, kWrapperTimeout);
    if (held) held_.emplace(std::move(*held));
    else if (child_->released()) return held.failure();  // its exec failed, or it never exec'd
    else if (auto r = child_->release(); !r) return r;
  }
  const pid_t pid = held_ ? held_->pid() : child_->pid();
  if (auto p = Process::attach(pid)) {
    process_ = std::move(*p);
    if (held_ && !bias_ && binary_->elf().isPie())
      if (auto b = process_->loadBias(binary_->elf())) bias_ = *b;
  }
  if (held_) held_->release();  // the Go program goes on from its exec stop
  return {};
}

bool TracedTarget::ended() {
  if (child_) return child_->poll().has_value();
  if (process_) return !process_->alive();
  return false;
}

bool TracedTarget::execed() const {
  if (!process_ || !process_->replacedImage()) return false;
  // Remembered now: the new program may be gone by the time the session
  // ends and the message is written.
  if (execedTo_.empty()) execedTo_ = process_->currentExePath();
  return true;
}

std::string TracedTarget::execedTo() const { return execedTo_; }

Result<uint64_t> TracedTarget::loadBias() {
  if (bias_) return *bias_;
  if (!binary_->elf().isPie()) return uint64_t{0};
  if (!process_) return fail(ErrorKind::Usage, "a PIE has no single load bias with -b: use -p or -c");
  // Just after exec the mapping may not be there yet: give it a moment.
  for (int i = 0; i < 50; i++) {
    auto b = process_->loadBias(binary_->elf());
    if (b) return *(bias_ = *b);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return process_->loadBias(binary_->elf());
}

}  // namespace goscope
