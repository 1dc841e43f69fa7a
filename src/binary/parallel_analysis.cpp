#include "binary/parallel_analysis.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "util/stop_signals.hpp"

namespace goscope {

unsigned usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

bool forEachInParallel(size_t count, const std::function<void(size_t)>& each, const AnalysisProgress& progress,
                       const AnalysisOptions& options) {
  // Chunks handed out in order through one counter: a thread that got long
  // functions simply takes fewer chunks.
  constexpr size_t kChunk = 64;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::atomic<bool> stop{false};
  // Takes and runs the next chunk; false when none is left.
  auto runChunk = [&]() -> bool {
    const size_t from = next.fetch_add(kChunk, std::memory_order_relaxed);
    if (from >= count) return false;
    const size_t to = std::min(count, from + kChunk);
    for (size_t i = from; i < to; ++i) each(i);
    done.fetch_add(to - from, std::memory_order_relaxed);
    return true;
  };
  auto work = [&] {
    while (!stop.load(std::memory_order_relaxed) && runChunk()) {
    }
  };

  unsigned threads = options.threads ? options.threads : usableCpus();
  // A thread costs ~50 us to start: not worth it for a handful of functions.
  threads = static_cast<unsigned>(std::min<size_t>(threads, 1 + count / 256));
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  {
    // The workers take no stop signal (they inherit the mask held only while
    // they are made): Ctrl-C and SIGTERM belong to the calling thread, which
    // polls them between chunks.
    const StopSignalsHeld held;
    for (unsigned t = 1; t < threads; ++t) {
      try {
        pool.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // no more threads to be had (RLIMIT_NPROC): fewer do the same work
      }
    }
  }
  // This thread works too, and between chunks reports progress (the hook is
  // not thread-safe: only this thread calls it).
  while (!stop.load(std::memory_order_relaxed) && runChunk())
    if (progress && !progress(done.load(std::memory_order_relaxed), count)) stop = true;
  for (auto& t : pool) t.join();
  if (options.threadsUsed) *options.threadsUsed = static_cast<unsigned>(pool.size() + 1);
  if (stop) return false;
  if (progress) progress(count, count);
  return true;
}

std::vector<Result<FunctionCode>> analyzeFunctions(const GoBinary& bin, std::span<const GoFunction* const> fns,
                                                   DecodeDepth depth, const AnalysisProgress& progress,
                                                   const AnalysisOptions& options) {
  // Filled in place by whichever thread takes the function (one array: no
  // second copy of 60,000 results to move them into order).
  std::vector<Result<FunctionCode>> out(fns.size(), Result<FunctionCode>(FunctionCode{}));
  if (!forEachInParallel(fns.size(), [&](size_t i) { out[i] = bin.analyze(*fns[i], depth); }, progress, options))
    out.clear();  // stopped early: incomplete, and the caller must not use any of it
  return out;
}

}  // namespace goscope
