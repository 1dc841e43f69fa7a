// trace's Delve plan: one breakpoint per matched function (at most 16),
// each hit printed in trace's own line and JSON format with its arguments
// at entry. Chosen when BPF cannot read what the user asked for (float
// arguments live in XMM registers) or with --strategy delve. Results are not
// captured on this path (a breakpoint stops at the entry): JSON gives
// "results": null, and stderr says so once.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/args.hpp"
#include "target/go_binary.hpp"

namespace goscope::cli {

struct DelveTraceOptions {
  pid_t pid = 0;
  std::vector<std::string> patterns;
  double durationS = 0;
  bool json = false;
  bool stack = false;
};

// Throws FatalError on errors.
int runTraceWithDelve(const Args& args, const GoBinary& binary, const DelveTraceOptions& options);

}  // namespace goscope::cli
