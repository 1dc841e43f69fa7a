#include "backend/bpf/stop_watch.hpp"

#include <time.h>

#include <cerrno>
#include <cstring>

#include "backend/bpf/privileges.hpp"
#include "stopwatch.skel.h"

namespace goscope::bpf {

Result<std::unique_ptr<StopWatch>> StopWatch::start(pid_t tgid) {
  if (auto ok = checkPrivileges(); !ok) return ok.failure();
  std::unique_ptr<StopWatch> w(new StopWatch());
  w->skel_ = stopwatch_bpf__open();
  if (!w->skel_) return fail(ErrorKind::External, std::string("stop watch: open failed: ") + std::strerror(errno));
  w->skel_->rodata->target_tgid = static_cast<uint32_t>(tgid);
  if (int e = stopwatch_bpf__load(w->skel_); e != 0)
    return fail(ErrorKind::External, std::string("stop watch: load failed: ") + std::strerror(-e));
  if (int e = stopwatch_bpf__attach(w->skel_); e != 0)
    return fail(ErrorKind::External, std::string("stop watch: attach failed: ") + std::strerror(-e));
  return w;
}

StopWatch::~StopWatch() {
  if (skel_) stopwatch_bpf__destroy(skel_);
}

double StopWatch::stoppedMs() const {
  const volatile auto* b = skel_->bss;
  double ns = static_cast<double>(b->stopped_ns);
  if (b->nstopped > 0) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
    if (now > b->since_ns) ns += static_cast<double>(now - b->since_ns);
  }
  return ns / 1e6;
}

double StopWatch::hitThreadStoppedMs() const { return static_cast<double>(skel_->bss->leader_ns) / 1e6; }

uint64_t StopWatch::stops() const { return skel_->bss->stops; }

}  // namespace goscope::bpf
