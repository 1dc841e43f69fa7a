// goscope as an unprivileged user with a setcap'd copy (docs/security.md,
// "filtered mode"): the command prefix that runs a command as uid 65534
// with no inherited capabilities, the file capabilities setcap(8) writes,
// and a scratch folder that user can enter. Header-only.
#pragma once

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace goscope::test {

// Prefix of a shell command that runs it as uid/gid 65534, no groups, no
// inheritable capabilities (a file's capabilities still apply).
inline const char* kAsNobody = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- ";

// File capabilities as setcap(8) writes cap_bpf,cap_perfmon+ep (struct
// vfs_cap_data, revision 2: permitted cap_bpf (39) and cap_perfmon (38),
// the effective bit set).
inline bool setBpfPerfmonCaps(const std::string& path) {
  struct {
    uint32_t magic;
    struct {
      uint32_t permitted, inheritable;
    } data[2];
  } caps{0x02000000u | 0x000001u, {{0, 0}, {(1u << (38 - 32)) | (1u << (39 - 32)), 0}}};
  return ::setxattr(path.c_str(), "security.capability", &caps, sizeof caps, 0) == 0;
}

// A fresh folder /tmp/goscope-TAG-PID, mode 0755, removed with everything
// in it at the end of its scope.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& tag) : path("/tmp/goscope-" + tag + "-" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    ::chmod(path.c_str(), 0755);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace goscope::test
