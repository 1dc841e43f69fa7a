// A target as the user names it: a binary on disk (-b) or a running process
// (-p). Both end in a GoBinary; a process also brings its load bias.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "binary/go_binary.hpp"
#include "process/process.hpp"
#include "util/result.hpp"

namespace goscope {

struct Target {
  std::shared_ptr<GoBinary> binary;
  std::optional<Process> process;
  uint64_t loadBias = 0;  // runtime address = link-time address + loadBias
  std::string describe() const;  // "PID 123 (/usr/bin/x)" or "/usr/bin/x"
};

// Both attach the binary's debug info (GoBinary::attachDebugInfo, with
// debugInfoSearch()): a --debug-file that does not belong is refused here.
// A truncated executable is refused (BadTarget, saying what is missing),
// unless acceptTruncated (goscope info and list: what is left is shown,
// GoBinary::truncation says what is not).
Result<Target> openBinaryTarget(const std::string& path, bool acceptTruncated = false);
// Errors: NotFound (no such PID), BadTarget ("PID N (path) is not a Go program").
Result<Target> openProcessTarget(pid_t pid, bool acceptTruncated = false);
// The directory part of a path ("." for a bare name): where .gnu_debuglink's file is looked for.
std::string directoryOf(const std::string& path);
// Parses the text of -p: a positive decimal PID.
Result<pid_t> parsePid(const std::string& text);

}  // namespace goscope
