#include "target/traced_target.hpp"

#include <chrono>
#include <thread>

#include "target/target.hpp"

namespace goscope {

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
    t.attachPath_ = t.process_->exeHandlePath();
    t.pidFilter_ = *spec.pid;
  } else if (spec.binary) {
    auto target = openBinaryTarget(*spec.binary);  // (explains a path only a container has)
    if (!target) return target.failure();
    t.binary_ = target->binary;
    t.attachPath_ = *spec.binary;
    t.display_ = *spec.binary;
  } else {
    auto child = LaunchedChild::start(*spec.command, spec.commandStdoutToStderr);
    if (!child) return child.failure();
    auto b = GoBinary::open(child->program());
    if (!b) return b.failure();  // the held child gets EOF and exits when `child` dies
    if (auto d = (*b)->attachDebugInfo(debugInfoSearch(), directoryOf(child->program())); !d) return d.failure();
    t.binary_ = *b;
    t.attachPath_ = child->program();
    t.pidFilter_ = child->pid();
    t.display_ = "PID " + std::to_string(child->pid()) + " (" + child->program() + ")";
    t.child_.emplace(std::move(*child));
  }
  return t;
}

std::string TracedTarget::describe() const { return display_; }

Result<void> TracedTarget::release() {
  if (!child_) return {};
  if (auto r = child_->release(); !r) return r;
  auto p = Process::attach(child_->pid());
  if (p) process_ = std::move(*p);
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
