// The BPF engine loaded on another thread while start-up reads the binary.
// Loading the programs (the kernel's verifier: docs/kernel.md, "A program
// load cut short") and starting the link holder depend on nothing the
// selection finds except the maps' sizes, so they run beside the analysis.
// The options are a guess made before the selection; take() hands the
// engine over when the guess covers what the session needs
// (bpf::whyEngineDoesNotFit), else loads again (docs/disassembly.md,
// "Start-up"). count and latency use it; trace and break when neither the
// rate probe's engine nor a rate is there (a rate sizes the ring from the
// capture plan, known after the selection).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "backend/bpf/bpf_engine.hpp"
#include "probe/pattern.hpp"
#include "binary/go_binary.hpp"
#include "util/result.hpp"

namespace goscope::session {

// How many functions of `bin` the patterns name: what the guess is sized
// from, before the selection knows.
size_t namedFunctions(const GoBinary& bin, const std::vector<Pattern>& patterns);
// The probe tables' guess for `named` functions: a quarter more for names
// whose every call was inlined (stand-ins of their own; Go's compiler, '*':
// 14,045 functions and 2,027 such names), and a few.
inline size_t probesGuess(size_t named) { return named + named / 4 + 64; }

class EngineAhead {
 public:
  // Starts loading with `guess` at once.
  explicit EngineAhead(const bpf::EngineOptions& guess);
  ~EngineAhead();  // waits for the load; an engine not taken is released
  EngineAhead(const EngineAhead&) = delete;
  EngineAhead& operator=(const EngineAhead&) = delete;

  // The engine loaded ahead when it serves `need`, else one loaded now with
  // `need`. An error of the load ahead is the session's error either way
  // (the same privileges and kernel): it is not retried.
  Result<std::unique_ptr<bpf::Engine>> take(const bpf::EngineOptions& need);

 private:
  // Joins the loader; after a stop signal, first cuts its program load
  // short (the verifier gives up on a pending signal), so that a Ctrl-C
  // during start-up does not wait for the verifier.
  void finishLoad();

  bpf::EngineOptions guess_;
  std::atomic<pid_t> loaderTid_{0};
  std::atomic<bool> loaderDone_{false};
  std::optional<Result<std::unique_ptr<bpf::Engine>>> loaded_;
  std::thread thread_;
};

}  // namespace goscope::session
