#include "process/exe_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>

#include "process/process.hpp"
#include "util/unique_fd.hpp"

namespace goscope {

namespace {

std::string proc(pid_t pid, const char* leaf) { return "/proc/" + std::to_string(pid) + "/" + leaf; }

Failure openFailure(pid_t pid, const char* what, int err) {
  if (err == ENOENT || err == ESRCH) return fail(ErrorKind::NotFound, "no process with PID " + std::to_string(pid));
  if (err == EACCES || err == EPERM)
    return fail(ErrorKind::Permission, std::string("cannot open ") + proc(pid, what) + ": " + std::strerror(err),
                "run as root (CAP_SYS_PTRACE) or as the process's user");
  return fail(ErrorKind::Internal, std::string("cannot open ") + proc(pid, what) + ": " + std::strerror(err));
}

// Reads exactly `len` bytes at `off`; short on EOF or an unreadable page.
size_t preadAll(int fd, uint8_t* out, size_t len, uint64_t off) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, out + got, len - got, static_cast<off_t>(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

std::string hexText(uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

}  // namespace

Result<std::vector<TextMapping>> exeTextMappings(pid_t pid) {
  auto p = Process::attach(pid);
  if (!p) return p.failure();
  auto maps = p->mappings();
  if (!maps) return maps.failure();
  // The executable's inode, as the mappings name it.
  uint64_t exeInode = 0;
  {
    struct ::stat st {};
    if (::stat(proc(pid, "exe").c_str(), &st) != 0) return openFailure(pid, "exe", errno);
    exeInode = st.st_ino;
  }
  std::vector<TextMapping> out;
  for (const auto& m : *maps)
    if (m.inode == exeInode && m.perms.size() >= 3 && m.perms[2] == 'x') out.push_back({m.start, m.end, m.offset});
  return out;
}

std::optional<uint8_t> exeFileByte(pid_t pid, const std::vector<TextMapping>& maps, uint64_t addr) {
  for (const auto& m : maps) {
    if (addr < m.start || addr >= m.end) continue;
    UniqueFd fd(::open(proc(pid, "exe").c_str(), O_RDONLY | O_CLOEXEC));
    uint8_t b = 0;
    if (!fd.valid() || preadAll(fd.get(), &b, 1, m.offset + (addr - m.start)) != 1) return std::nullopt;
    return b;
  }
  return std::nullopt;
}

Result<std::vector<TextDifference>> compareExeText(pid_t pid, const std::vector<TextMapping>& maps) {
  UniqueFd exe(::open(proc(pid, "exe").c_str(), O_RDONLY | O_CLOEXEC));
  if (!exe.valid()) return openFailure(pid, "exe", errno);
  UniqueFd mem(::open(proc(pid, "mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid()) return openFailure(pid, "mem", errno);
  std::vector<TextDifference> out;
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint8_t> file(kChunk), memory(kChunk);
  for (const auto& m : maps) {
    for (uint64_t at = m.start; at < m.end; at += kChunk) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, m.end - at));
      const uint64_t off = m.offset + (at - m.start);
      // The mapping may extend past the end of the file (the last page):
      // only the bytes the file has are compared.
      const size_t fileLen = preadAll(exe.get(), file.data(), len, off);
      const size_t memLen = preadAll(mem.get(), memory.data(), fileLen, at);
      if (memLen < fileLen) {
        if (!processIsAlive(pid)) return fail(ErrorKind::TargetGone, "PID " + std::to_string(pid) + " exited");
        return fail(ErrorKind::Internal, "cannot read PID " + std::to_string(pid) + "'s code at " + hexText(at + memLen) +
                                             " through /proc/PID/mem");
      }
      for (size_t i = 0; i < fileLen; ++i)
        if (file[i] != memory[i]) out.push_back({at + i, off + i, file[i], memory[i]});
      if (fileLen < len) break;
    }
  }
  return out;
}

}  // namespace goscope
