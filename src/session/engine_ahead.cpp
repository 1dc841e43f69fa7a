#include "session/engine_ahead.hpp"

#include <spdlog/spdlog.h>

#include "session/host_costs.hpp"
#include "backend/bpf/engine_fit.hpp"
#include "util/stop_signals.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <system_error>
#include <thread>

namespace goscope::session {

size_t namedFunctions(const GoBinary& bin, const std::vector<Pattern>& patterns) {
  size_t named = 0;
  for (const auto& fn : bin.pclntab().functions())
    named += std::any_of(patterns.begin(), patterns.end(), [&](const Pattern& p) { return p.matches(fn.name); });
  return named;
}

EngineAhead::EngineAhead(const bpf::EngineOptions& guess) : guess_(guess) {
  try {
    // The loader takes no stop signal: they belong to the session's thread
    // (util/stop_signals.hpp); it inherits the mask held here.
    const StopSignalsHeld held;
    thread_ = std::thread([this] {
      loaderTid_ = static_cast<pid_t>(::syscall(SYS_gettid));
      try {
        loaded_.emplace(bpf::Engine::load(guess_));
        if (!stopRequested()) preloadHostCosts();  // the session prices its probes right after the attach
      } catch (const std::exception& e) {
        loaded_.emplace(fail(ErrorKind::Internal, std::string("loading the BPF programs: ") + e.what()));
      }
      loaderDone_ = true;
    });
  } catch (const std::system_error&) {
    // No thread to be had (RLIMIT_NPROC): take() loads on this one.
  }
}

EngineAhead::~EngineAhead() { finishLoad(); }

namespace {
void wakeOnly(int) {}
}  // namespace

void EngineAhead::finishLoad() {
  if (!thread_.joinable()) return;
  if (stopRequested()) {
    // The kernel's verifier stops with EAGAIN when its thread has a signal
    // pending, and libbpf tries a load that failed so a few times: a signal
    // every few ms until the loader is done makes each try end at once
    // (docs/kernel.md, "A program load cut short"). SIGURG with a handler
    // that does nothing: the loader's other system calls restart.
    struct sigaction sa {};
    sa.sa_handler = wakeOnly;
    sa.sa_flags = SA_RESTART;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGURG, &sa, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + std::chrono::seconds(5);
    while (!loaderDone_ && std::chrono::steady_clock::now() < deadline) {
      if (const pid_t tid = loaderTid_; tid > 0) ::syscall(SYS_tgkill, ::getpid(), tid, SIGURG);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    thread_.join();
    spdlog::debug("bpf: the programs' load ended {:.1f} ms after the stop signal",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return;
  }
  thread_.join();
}

Result<std::unique_ptr<bpf::Engine>> EngineAhead::take(const bpf::EngineOptions& need) {
  finishLoad();
  if (!loaded_) return bpf::Engine::load(need);
  auto got = std::move(*loaded_);
  loaded_.reset();
  if (!got) return got;
  const std::string why = bpf::whyEngineDoesNotFit(guess_, need);
  if (why.empty()) {
    spdlog::debug("bpf: programs loaded during the analysis (beside it, on another thread)");
    return got;
  }
  spdlog::debug("bpf: the programs loaded during the analysis do not serve this session ({}): loaded again", why);
  got->reset();  // its link holder and maps go before the new ones come
  return bpf::Engine::load(need);
}

}  // namespace goscope::session
