// A live process's code against the executable file it was loaded from:
// every mapping of /proc/PID/exe's file with exec permission, compared byte
// for byte. A debugger that died with its breakpoints in place leaves int3
// (0xCC) bytes where the file has others; uprobes look the same while they
// are attached.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "util/result.hpp"

namespace goscope {

struct TextMapping {
  uint64_t start = 0, end = 0;  // runtime addresses
  uint64_t offset = 0;          // file offset of `start`
};

// The mappings of the process's own executable (matched by inode) with exec
// permission. NotFound/TargetGone when the process is gone, Permission when
// /proc hides it.
Result<std::vector<TextMapping>> exeTextMappings(pid_t pid);

// The executable file's byte at runtime address `addr`, read through
// /proc/PID/exe (the very file the process runs, even if replaced on disk).
// None when `addr` is in none of `maps`.
std::optional<uint8_t> exeFileByte(pid_t pid, const std::vector<TextMapping>& maps, uint64_t addr);

// One byte of code that differs from the file.
struct TextDifference {
  uint64_t addr = 0;        // runtime address
  uint64_t fileOffset = 0;  // where the file has `file`
  uint8_t file = 0, memory = 0;
};

// Every differing byte of `maps`, memory read through /proc/PID/mem.
Result<std::vector<TextDifference>> compareExeText(pid_t pid, const std::vector<TextMapping>& maps);

}  // namespace goscope
