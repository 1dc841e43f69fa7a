// UprobeMultiLink: one uprobe_multi BPF link (kernel 6.6+) attaching one
// program to many offsets of one file in a single bpf(BPF_LINK_CREATE) call,
// each offset with its own 64-bit cookie. Debian's libbpf 1.1.2 has no API for
// it, so this is the raw syscall. RAII: closing the link detaches every probe
// (the kernel restores the original bytes, also if this process is killed).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "util/result.hpp"
#include "util/unique_fd.hpp"

namespace goscope::bpf {

class LinkHolder;

inline constexpr int kBpfTraceUprobeMulti = 48;  // enum bpf_attach_type
inline constexpr uint32_t kUprobeMultiReturn = 1; // BPF_F_UPROBE_MULTI_RETURN (never used on Go code)

// The raw call. Returns the link fd, or -errno. pid 0 = no filter.
int rawUprobeMultiCreate(int progFd, const char* path, const uint64_t* offsets, const uint64_t* cookies,
                         uint32_t cnt, uint32_t multiFlags, int pid);

// Text for an errno returned by the kernel for a uprobe attach: says what it
// usually means for uprobes (e.g. 524 = an instruction uprobes cannot handle).
std::string describeUprobeErrno(int err);

// Either held by the session's LinkHolder (an id there; this process has no
// fd of it: link_holder.hpp says why) or, without a holder, an fd of ours.
class UprobeMultiLink {
 public:
  UprobeMultiLink() = default;
  UprobeMultiLink(UprobeMultiLink&& o) noexcept { *this = std::move(o); }
  UprobeMultiLink& operator=(UprobeMultiLink&& o) noexcept;
  ~UprobeMultiLink() { detach(); }

  // The program must have been loaded with expected_attach_type 48.
  // offsets and cookies have the same length (> 0). Errors carry the errno in
  // `errnoOut` when non-null, so callers can decide to fall back. With a
  // holder, the link is created and kept there.
  static Result<UprobeMultiLink> attach(int progFd, const std::string& path, pid_t pid,
                                        std::span<const uint64_t> offsets, std::span<const uint64_t> cookies,
                                        int* errnoOut = nullptr, std::shared_ptr<LinkHolder> holder = nullptr);

  bool attached() const { return fd_.valid() || heldId_ != 0; }
  bool held() const { return heldId_ != 0; }
  size_t size() const { return count_; }
  int fd() const { return fd_.get(); }  // -1 when held
  void detach();

 private:
  UniqueFd fd_;
  std::shared_ptr<LinkHolder> holder_;
  uint32_t heldId_ = 0;
  size_t count_ = 0;
};

}  // namespace goscope::bpf
