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

namespace {
// bpf_ktime_get_ns's clock.
uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

double StopWatch::stoppedMs() const {
  const volatile auto* b = skel_->bss;
  double ns = static_cast<double>(b->stopped_ns);
  if (b->nstopped > 0) {
    const uint64_t now = monotonicNs();
    if (now > b->since_ns) ns += static_cast<double>(now - b->since_ns);
  }
  return ns / 1e6;
}

double StopWatch::hitStoppedMs() const {
  double ns = static_cast<double>(skel_->bss->hit_ns);
  // Hits' stops in progress count too: a session reads this when its
  // breakpoints are set and when its last hit is still stopped
  // (bpf/stopwatch.bpf.c keeps them in trap_stops until the thread runs).
  const uint64_t now = monotonicNs();
  uint32_t key = 0, next = 0;
  const void* prev = nullptr;
  for (int i = 0; i < 8192 && bpf_map__get_next_key(skel_->maps.trap_stops, prev, &next, sizeof next) == 0; i++) {
    key = next;
    prev = &key;
    uint64_t began = 0;
    if (bpf_map__lookup_elem(skel_->maps.trap_stops, &key, sizeof key, &began, sizeof began, 0) == 0 && now > began)
      ns += static_cast<double>(now - began);
  }
  return ns / 1e6;
}

uint64_t StopWatch::stops() const { return skel_->bss->stops; }

}  // namespace goscope::bpf
