// Process: a live PID seen through /proc — its executable, its mappings, the
// load bias of a PIE executable, and reads of its memory without stopping it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace goscope {

class ElfFile;

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // "r-xp"
  uint64_t inode = 0;
  std::string path;
};

class Process {
 public:
  // NotFound when the PID does not exist; Permission when /proc hides it.
  static Result<Process> attach(pid_t pid);

  pid_t pid() const { return pid_; }
  // The executable's path as the kernel reports it (may end in " (deleted)").
  const std::string& exePath() const { return exePath_; }
  // A path that opens the very file the process runs, even if it was deleted
  // or replaced on disk since: /proc/PID/exe.
  std::string exeHandlePath() const;

  bool alive() const;
  // The process now runs another executable than at attach (it exec'd):
  // /proc/PID/exe names another device and inode. False once it is gone.
  bool replacedImage() const;
  // What /proc/PID/exe names now (after an exec: the new program); empty
  // once the process is gone.
  std::string currentExePath() const;
  Result<std::vector<Mapping>> mappings() const;
  // Where the executable's link-time addresses sit in this process:
  // runtime address = link-time address + bias. 0 for non-PIE executables.
  Result<uint64_t> loadBias(const ElfFile& exe) const;
  // process_vm_readv: reads without stopping the target.
  Result<std::vector<uint8_t>> readMemory(uint64_t addr, size_t len) const;

 private:
  pid_t pid_ = -1;
  std::string exePath_;
  uint64_t exeInode_ = 0;
  uint64_t exeDev_ = 0;
};

// True while `pid` exists and is not a zombie (kill(pid, 0) also succeeds
// for a zombie, so /proc/PID/stat's state is read).
bool processIsAlive(pid_t pid);

// Parses one line of /proc/PID/maps; pure, for unit tests.
bool parseMapsLine(const std::string& line, Mapping& out);

}  // namespace goscope
