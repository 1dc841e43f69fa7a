// The disassembly of many functions of one binary, on every CPU goscope may
// run on. Start-up of `count -b BIN '*'` on a 60,000-function binary is
// mostly this; each function's analysis is independent and pure,
// so the work splits without locks, and the results come back in the order
// asked, whatever the threads did: the same selection, the same probe ids,
// run after run.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "binary/disasm.hpp"
#include "binary/go_binary.hpp"
#include "util/result.hpp"

namespace goscope {

// Called on the calling thread only, now and then, with how many functions
// are done; returning false stops the work early (Ctrl-C), and the result
// is then empty.
using AnalysisProgress = std::function<bool(size_t done, size_t total)>;

struct AnalysisOptions {
  unsigned threads = 0;               // 0: one per CPU of this process's affinity mask (fewer for small inputs)
  unsigned* threadsUsed = nullptr;    // if set: how many threads did the work (for -v)
};

// each(i) for every i in [0, count), in chunks on every CPU (each(i) must
// touch only what is i's, or lock); false when progress stopped it early.
bool forEachInParallel(size_t count, const std::function<void(size_t)>& each, const AnalysisProgress& progress = {},
                       const AnalysisOptions& options = {});

// results[i] is bin.analyze(*fns[i], depth).
std::vector<Result<FunctionCode>> analyzeFunctions(const GoBinary& bin, std::span<const GoFunction* const> fns,
                                                   DecodeDepth depth, const AnalysisProgress& progress = {},
                                                   const AnalysisOptions& options = {});

// CPUs in this process's affinity mask (at least 1).
unsigned usableCpus();

}  // namespace goscope
