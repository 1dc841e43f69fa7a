// break's BPF plan: the same request as a Delve breakpoint — one function,
// its arguments, N stack frames, -n hits, -d seconds — served by an entry
// probe that captures in the kernel, so the process never stops. Prints in
// break's own format (text and JSON keys), so a reader need not know which
// path ran; stderr says it.
#pragma once

#include <sys/types.h>

#include <string>

#include "cli/delve_hits.hpp"

namespace goscope::cli {

struct BreakOptions {
  pid_t pid = 0;
  std::string location;  // a function name (or pattern)
  CaptureParts parts;    // exprs and locals are Delve's: the planner never sends them here
  long long maxHits = 0;
  double durationS = 0;
  bool json = false;
};

// Throws FatalError on errors, as the subcommands do.
int runBreakWithBpf(const BreakOptions& options);

}  // namespace goscope::cli
