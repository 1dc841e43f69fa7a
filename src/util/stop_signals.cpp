#include "util/stop_signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <time.h>

#include <atomic>

namespace goscope {

namespace {
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};
// Lock-free atomics are async-signal-safe; the argument is published before
// the hook and the hook withdrawn first, so a handler never pairs a hook
// with a stale argument.
std::atomic<StopHook> g_hook{nullptr};
std::atomic<void*> g_hookArg{nullptr};
static_assert(std::atomic<StopHook>::is_always_lock_free && std::atomic<void*>::is_always_lock_free &&
              std::atomic<unsigned>::is_always_lock_free);
std::atomic<bool> g_probesOn{false};
std::atomic<double> g_deadline{0};  // CLOCK_MONOTONIC seconds; 0 = none
std::atomic<unsigned> g_signals{0};      // stop signals received
std::atomic<unsigned> g_signalsAtOff{0};  // of them, received before the probes went off
std::atomic<bool> g_probesWentOff{false};
std::atomic<bool> g_ending{false};  // the session's loop ended; the probes are still on
std::atomic<bool> g_terminate{false};  // a SIGTERM came
std::atomic<bool> g_outputDropped{false};

void onSignal(int sig) {
  g_signal.store(sig);
  if (sig == SIGTERM) g_terminate.store(true);
  g_signals.fetch_add(1);
  g_stop.store(true);
  if (StopHook hook = g_hook.load()) hook(g_hookArg.load());
}
}  // namespace

void installStopSignals() {
  struct sigaction sa{};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits return EINTR and the loop looks at the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed pipe on stdout is an error to report, not a death
}

bool stopRequested() { return g_stop.load(); }
int stopSignal() { return g_signal.load(); }
unsigned stopSignalCount() { return g_signals.load(); }
void requestStop() { g_stop.store(true); }

void setProbesOn(double deadlineS) {
  g_deadline.store(deadlineS);
  g_ending.store(false);
  g_probesOn.store(true);
}

void setProbesOff() {
  if (!g_probesOn.load()) return;  // already off (a session's detach and its scope both say so)
  g_signalsAtOff.store(g_signals.load());
  g_probesOn.store(false);
  g_probesWentOff.store(true);
  g_deadline.store(0);
  g_ending.store(false);
}

void setSessionEnding() { g_ending.store(true); }

bool probesCameOff() { return g_probesWentOff.load() && !g_probesOn.load(); }

bool terminateRequested() { return g_terminate.load(); }

void setOutputDropped() { g_outputDropped.store(true); }
bool outputDropped() { return g_outputDropped.load(std::memory_order_relaxed); }

bool dropHeldOutput() {
  if (g_probesOn.load()) return false;
  const unsigned signals = g_signals.load();
  if (signals >= 2) return true;  // a second stop signal, whenever the first came
  if (!g_probesWentOff.load()) return signals > 0;  // no probes to take off first: nothing to wait for
  return signals > g_signalsAtOff.load();  // the first, after the probes were off (-d's end, the target's exit)
}

bool endPending() {
  if (!g_probesOn.load()) return false;
  if (g_stop.load() || g_ending.load()) return true;
  const double deadline = g_deadline.load();
  if (deadline <= 0) return false;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9 >= deadline;
}

void setStopHook(StopHook hook, void* arg) {
  if (!hook) {
    g_hook.store(nullptr);
    g_hookArg.store(nullptr);
    return;
  }
  g_hookArg.store(arg);
  g_hook.store(hook);
}

StopSignalsHeld::StopSignalsHeld() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, &old_);
}

StopSignalsHeld::~StopSignalsHeld() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

}  // namespace goscope
