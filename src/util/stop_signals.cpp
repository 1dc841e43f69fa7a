#include "util/stop_signals.hpp"

#include <signal.h>

#include <atomic>

namespace goscope {

namespace {
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};
void onSignal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
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
void requestStop() { g_stop.store(true); }

}  // namespace goscope
