// Process: a live PID seen through /proc — its executable, its mappings, the
// load bias of a PIE executable, and reads of its memory without stopping it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "binary/file_identity.hpp"
#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope {

class ElfFile;

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // "r-xp"
  uint64_t inode = 0;
  std::string path;
};

// A process is pinned when it is attached: a pidfd (which goes on naming
// this process, never a later one given the same PID), its start time, and
// the executable it ran then. verifyIdentity() says whether the PID still
// names that process running that file (docs/security.md, "One target from
// the analysis to the attach").
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

  // The pinned process has not exited (a zombie has).
  bool alive() const;
  // The process now runs another executable than at attach (it exec'd):
  // /proc/PID/exe names another device and inode. False once it is gone.
  bool replacedImage() const;
  // The executable as it was at attach.
  const FileIdentity& exeIdentity() const { return exe_; }
  // Clock ticks after boot at which the process started (/proc/PID/stat 22).
  uint64_t startTime() const { return startTime_; }
  // Ok while the PID names the process pinned at attach, running the file
  // it ran then (`exe`: the file the analysis read, when given). Else
  // TargetGone, saying what happened `when` ("before the probes were
  // attached"): it exited (and, when the PID is taken again, that another
  // process has it now), or it exec'd another program.
  Result<void> verifyIdentity(const std::string& when, const FileIdentity* exe = nullptr) const;
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
  FileIdentity exe_;
  uint64_t startTime_ = 0;
  std::shared_ptr<const UniqueFd> pidfd_;  // shared: a Process is copied
};

// True while `pid` exists and is not a zombie (kill(pid, 0) also succeeds
// for a zombie, so /proc/PID/stat's state is read).
bool processIsAlive(pid_t pid);

// Parses one line of /proc/PID/maps; pure, for unit tests.
bool parseMapsLine(const std::string& line, Mapping& out);

}  // namespace goscope
