#include "api/engine_ahead.hpp"

#include <spdlog/spdlog.h>

#include "api/goscope.hpp"
#include "backend/bpf/engine_fit.hpp"
#include "util/stop_signals.hpp"

#include <algorithm>
#include <exception>
#include <system_error>

namespace goscope::api {

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
      try {
        loaded_.emplace(bpf::Engine::load(guess_));
        preloadHostCosts();  // the session prices its probes right after the attach
      } catch (const std::exception& e) {
        loaded_.emplace(fail(ErrorKind::Internal, std::string("loading the BPF programs: ") + e.what()));
      }
    });
  } catch (const std::system_error&) {
    // No thread to be had (RLIMIT_NPROC): take() loads on this one.
  }
}

EngineAhead::~EngineAhead() {
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<bpf::Engine>> EngineAhead::take(const bpf::EngineOptions& need) {
  if (thread_.joinable()) thread_.join();
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

}  // namespace goscope::api
