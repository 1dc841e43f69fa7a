#include "backend/bpf/live_uprobes.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace goscope::bpf {

namespace {

// Spelled out (kernel 6.8 UAPI): the installed headers may predate
// uprobe_multi's link info.
constexpr int kBpfObjGetInfoByFd = 15;
constexpr int kBpfLinkGetFdById = 30;
constexpr int kBpfLinkGetNextId = 31;
constexpr uint32_t kLinkTypePerfEvent = 7;
constexpr uint32_t kLinkTypeUprobeMulti = 12;
constexpr uint32_t kPerfEventUprobe = 1, kPerfEventUretprobe = 2;

struct IdAttr {
  uint32_t id;  // start_id / link_id
  uint32_t nextId;
  uint32_t openFlags;
};

struct InfoAttr {
  uint32_t bpfFd;
  uint32_t infoLen;
  uint64_t info;
};

// struct bpf_link_info, the two members read here.
struct LinkInfo {
  uint32_t type;   // 0
  uint32_t id;     // 4
  uint32_t progId; // 8
  uint32_t pad;    // 12
  union {
    struct {
      uint64_t path;           // 16
      uint64_t offsets;        // 24
      uint64_t refCtrOffsets;  // 32
      uint64_t cookies;        // 40
      uint32_t pathSize;       // 48
      uint32_t count;          // 52
      uint32_t flags;          // 56
      uint32_t pid;            // 60
    } multi;
    struct {
      uint32_t type;      // 16
      uint32_t pad;       // 20
      uint64_t fileName;  // 24
      uint32_t nameLen;   // 32
      uint32_t offset;    // 36
      uint64_t cookie;    // 40
    } perf;
    uint8_t raw[112];
  };
};
static_assert(offsetof(LinkInfo, multi.pid) == 60 && offsetof(LinkInfo, perf.offset) == 36);

long bpf(int cmd, void* attr, size_t size) { return ::syscall(SYS_bpf, cmd, attr, size); }

bool info(int fd, LinkInfo& li) {
  InfoAttr a{static_cast<uint32_t>(fd), sizeof li, reinterpret_cast<uint64_t>(&li)};
  return bpf(kBpfObjGetInfoByFd, &a, sizeof a) == 0;
}

}  // namespace

Result<std::vector<LiveUprobeLink>> liveUprobeLinks() {
  std::vector<LiveUprobeLink> out;
  uint32_t id = 0;
  for (;;) {
    IdAttr next{id, 0, 0};
    if (bpf(kBpfLinkGetNextId, &next, sizeof next) != 0) {
      if (errno == ENOENT) break;
      if (errno == EPERM || errno == EACCES)
        return fail(ErrorKind::Permission, "cannot list BPF links (live uprobes): " + std::string(std::strerror(errno)),
                    "run as root");
      return fail(ErrorKind::External, "cannot list BPF links: " + std::string(std::strerror(errno)));
    }
    id = next.nextId;
    IdAttr get{id, 0, 0};
    long fd = bpf(kBpfLinkGetFdById, &get, sizeof get);
    if (fd < 0) continue;  // gone meanwhile
    LinkInfo li;
    std::memset(&li, 0, sizeof li);
    char path[4096] = {};
    if (info(static_cast<int>(fd), li) && li.type == kLinkTypeUprobeMulti) {
      const uint32_t count = li.multi.count;
      std::vector<uint64_t> offsets(count);
      std::memset(&li, 0, sizeof li);
      li.multi.path = reinterpret_cast<uint64_t>(path);
      li.multi.pathSize = sizeof path;
      li.multi.offsets = reinterpret_cast<uint64_t>(offsets.data());
      li.multi.count = count;
      if (count > 0 && info(static_cast<int>(fd), li)) {
        offsets.resize(std::min(count, li.multi.count));
        out.push_back({id, "uprobe_multi", path, li.multi.pid, std::move(offsets)});
      }
    } else if (li.type == kLinkTypePerfEvent && (li.perf.type == kPerfEventUprobe || li.perf.type == kPerfEventUretprobe)) {
      std::memset(&li, 0, sizeof li);
      li.perf.fileName = reinterpret_cast<uint64_t>(path);
      li.perf.nameLen = sizeof path;
      if (info(static_cast<int>(fd), li)) out.push_back({id, "perf_event", path, 0, {li.perf.offset}});
    }
    ::close(static_cast<int>(fd));
  }
  return out;
}

}  // namespace goscope::bpf
