#include "process/process.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>
#include <fstream>
#include <signal.h>
#include <sstream>

#include "binary/elf_file.hpp"
#include "process/proc_stat.hpp"
#include "process/ptrace_privileges.hpp"

namespace goscope {

static std::string procPath(pid_t pid, const char* leaf) {
  return "/proc/" + std::to_string(pid) + "/" + leaf;
}

namespace {

// pidfd_open(2) (Linux 5.3): -1 when the kernel or the PID says no.
int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  return static_cast<int>(::syscall(434, pid, 0));
#endif
}

uint64_t startTimeOf(pid_t pid) {
  auto st = readProcStat(pid);
  return st ? st->number(22) : 0;
}

}  // namespace

Result<Process> Process::attach(pid_t pid) {
  if (pid <= 0) return fail(ErrorKind::Usage, "invalid PID " + std::to_string(pid));
  Process p;
  p.pid_ = pid;
  struct stat st{};
  // Pinned first: whatever is read below is then checked to be this
  // process's (its start time again at the end), not a later one's.
  if (int fd = openPidfd(pid); fd >= 0) p.pidfd_ = std::make_shared<const UniqueFd>(fd);
  else if (errno == ESRCH) return fail(ErrorKind::NotFound, "no process with PID " + std::to_string(pid));
  p.startTime_ = startTimeOf(pid);
  if (::stat(procPath(pid, "").c_str(), &st) != 0)
    return fail(ErrorKind::NotFound, "no process with PID " + std::to_string(pid));
  // /proc/TID answers for a thread too (it is only hidden from readdir), so
  // a thread id given as -p would otherwise fail later with "No such process".
  if (pid_t leader = threadGroupOf(pid); leader > 0 && leader != pid)
    return fail(ErrorKind::Usage,
                std::to_string(pid) + " is a thread of process " + std::to_string(leader) + ", not a process",
                "give the process: -p " + std::to_string(leader));
  char buf[4096];
  ssize_t n = ::readlink(procPath(pid, "exe").c_str(), buf, sizeof buf - 1);
  // A process in the middle of an exec from a thread other than its leader
  // has no executable for a moment (its old leader is a zombie until the
  // new one takes its PID, a zombie meanwhile): asked again for up to
  // 100 ms before it is called a zombie.
  for (int i = 0; n < 0 && errno == ENOENT && i < 50 && ::access(procPath(pid, "").c_str(), F_OK) == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    n = ::readlink(procPath(pid, "exe").c_str(), buf, sizeof buf - 1);
  }
  if (n < 0) {
    int err = errno;
    if (err == ENOENT)  // a zombie or a kernel thread has no executable
      return fail(ErrorKind::BadTarget, "PID " + std::to_string(pid) + " has no executable (kernel thread or zombie)");
    // The kernel's ptrace access check: another user's process, or one
    // holding capabilities we lack (a root process, to a root goscope
    // without CAP_SYS_PTRACE). A goscope that has CAP_SYS_PTRACE is still
    // refused a process holding capabilities outside its own set (PID 1 of
    // a VM whose processes run without CAP_SYS_RESOURCE: docs/security.md):
    // name those, since "needs CAP_SYS_PTRACE" would send the user looking
    // for a capability they already have.
    const std::string what = "cannot read PID " + std::to_string(pid) + "'s executable (/proc/" +
                             std::to_string(pid) + "/exe): " + std::strerror(err);
    if (selfHasCapability(kCapSysPtrace)) {
      std::string extra = capabilitiesBeyondOurs(pid);
      if (!extra.empty())
        return fail(ErrorKind::Permission,
                    what + "; goscope has CAP_SYS_PTRACE, but PID " + std::to_string(pid) +
                        " holds capabilities goscope lacks (" + extra + ")",
                    "run goscope with those capabilities (its bounding set lacks them), or pick another process");
      return fail(ErrorKind::Permission,
                  what + "; goscope has CAP_SYS_PTRACE, so a security module or the process's own "
                         "settings refuse access",
                  "check the kernel log for an LSM denial (dmesg)");
    }
    return fail(ErrorKind::Permission, what + "; that needs CAP_SYS_PTRACE or the target's own user",
                "run as root with CAP_SYS_PTRACE, or as the user that runs PID " + std::to_string(pid));
  }
  p.exePath_.assign(buf, static_cast<size_t>(n));
  if (::stat(procPath(pid, "exe").c_str(), &st) == 0) {
    p.exeInode_ = st.st_ino;
    p.exeDev_ = st.st_dev;
    p.exe_ = FileIdentity::of(st);
  }
  if (!p.alive() || startTimeOf(pid) != p.startTime_)
    return fail(ErrorKind::NotFound, "PID " + std::to_string(pid) + " exited while goscope was opening it");
  return p;
}

Result<void> Process::verifyIdentity(const std::string& when, const FileIdentity* exe) const {
  const std::string who = "PID " + std::to_string(pid_);
  const uint64_t startNow = startTimeOf(pid_);
  if (!alive() || (startTime_ && startNow != startTime_)) {
    std::string msg = who + " (" + exePath_ + ") exited " + when;
    if (startNow && startNow != startTime_) {
      std::string other = currentExePath();
      msg += "; " + who + " now names another process" + (other.empty() ? std::string() : " (" + other + ")") +
             ", which is not probed";
    }
    return fail(ErrorKind::TargetGone, msg);
  }
  struct stat st{};
  if (::stat(procPath(pid_, "exe").c_str(), &st) == 0) {
    const FileIdentity now = FileIdentity::of(st);
    const FileIdentity& want = exe ? *exe : exe_;
    if (want.ino && !now.sameFile(want))
      return fail(ErrorKind::TargetGone,
                  who + " replaced its program " + when + " (exec of " + currentExePath() + "; " +
                      describeChange(want, now) + "): the analysis was of " + exePath_);
  }
  return {};
}

std::string Process::currentExePath() const {
  char buf[4096];
  ssize_t n = ::readlink(procPath(pid_, "exe").c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string Process::exeHandlePath() const { return procPath(pid_, "exe"); }

bool Process::alive() const {
  if (pidfd_ && pidfd_->valid()) {
    // A pidfd polls readable once its process has exited (a zombie
    // included), whatever now has the PID.
    pollfd p{pidfd_->get(), POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return processIsAlive(pid_);  // not exited; a kernel thread or zombie check as before
    // Readable: exited, or a thread other than the leader exec'd (the
    // kernel's de_thread: the old leader exits, and the process goes on
    // under its PID with the leader's start time). Told apart below.
  }
  return processIsAlive(pid_) && (!startTime_ || startTimeOf(pid_) == startTime_);
}

bool Process::replacedImage() const {
  struct stat st{};
  // Not alive(): when a thread other than the leader execs, the old leader's
  // exit makes the pidfd poll readable although the process goes on under
  // its PID with its start time (the kernel's de_thread). The same PID and
  // start time with another executable is this process after an exec.
  if (exeInode_ == 0 || !processIsAlive(pid_) || (startTime_ && startTimeOf(pid_) != startTime_) ||
      ::stat(procPath(pid_, "exe").c_str(), &st) != 0)
    return false;
  return st.st_ino != exeInode_ || st.st_dev != exeDev_;
}

bool processIsAlive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A zombie still answers kill(0): look at its state.
  std::ifstream in(procPath(pid, "stat"));
  std::string s;
  if (!std::getline(in, s)) return false;
  auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && s[rp + 2] != 'Z' && s[rp + 2] != 'X';
}

bool parseMapsLine(const std::string& line, Mapping& m) {
  // start-end perms offset dev inode [path]
  std::istringstream in(line);
  std::string range, dev;
  m.path.clear();
  if (!(in >> range >> m.perms >> std::hex >> m.offset >> dev >> std::dec >> m.inode)) return false;
  auto dash = range.find('-');
  if (dash == std::string::npos) return false;
  try {
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
  } catch (...) {
    return false;
  }
  std::getline(in >> std::ws, m.path);
  return true;
}

Result<std::vector<Mapping>> Process::mappings() const {
  std::ifstream in(procPath(pid_, "maps"));
  if (!in) return fail(ErrorKind::TargetGone, "process " + std::to_string(pid_) + " exited");
  std::vector<Mapping> out;
  for (std::string line; std::getline(in, line);) {
    Mapping m;
    if (parseMapsLine(line, m)) out.push_back(std::move(m));
  }
  return out;
}

Result<uint64_t> Process::loadBias(const ElfFile& exe) const {
  if (!exe.isPie()) return uint64_t{0};
  auto maps = mappings();
  if (!maps) return maps.failure();
  // The executable's offset-0 mapping, found by inode so that a deleted or
  // replaced file on disk does not confuse us.
  for (const auto& m : *maps) {
    bool same = exeInode_ ? m.inode == exeInode_ : m.path == exePath_;
    if (same && m.offset == 0) return m.start - exe.firstLoadVaddr();
  }
  return fail(ErrorKind::BadTarget, "PID " + std::to_string(pid_) + ": executable mapping not found in /proc/PID/maps");
}

Result<std::vector<uint8_t>> Process::readMemory(uint64_t addr, size_t len) const {
  std::vector<uint8_t> buf(len);
  iovec local{buf.data(), len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n < 0) {
    int err = errno;
    if (err == ESRCH) return fail(ErrorKind::TargetGone, "process " + std::to_string(pid_) + " exited");
    if (err == EPERM) return fail(ErrorKind::Permission, "cannot read memory of PID " + std::to_string(pid_), "run as root or with CAP_SYS_PTRACE");
    return fail(ErrorKind::Internal, "reading memory of PID " + std::to_string(pid_) + ": " + std::strerror(err));
  }
  if (static_cast<size_t>(n) != len)
    return fail(ErrorKind::Internal, "short read of PID " + std::to_string(pid_) + " memory");
  return buf;
}

}  // namespace goscope
