#include "backend/bpf/event.hpp"

#include <cstring>

namespace goscope::bpf {

uint64_t Event::reg(Reg r) const {
  auto i = static_cast<unsigned>(r);
  if (i < GS_NREGS) return regs[i];
  if (r == Reg::RSP) return sp;
  return 0;
}

std::vector<uint64_t> completeStack(std::span<const uint64_t> kernelFrames, uint64_t retAddr) {
  std::vector<uint64_t> out;
  out.reserve(kernelFrames.size() + 1);
  for (size_t i = 0; i < kernelFrames.size(); i++) {
    if (kernelFrames[i] == 0) break;
    out.push_back(kernelFrames[i]);
    if (i == 0 && retAddr) out.push_back(retAddr);
  }
  if (out.empty() && retAddr) out.push_back(retAddr);
  return out;
}

bool stackIsCut(std::span<const uint64_t> kernelFrames) {
  return kernelFrames.size() >= GS_MAX_STACK_DEPTH && kernelFrames[GS_MAX_STACK_DEPTH - 1] != 0;
}

Result<void> decodeEventInto(std::span<const uint8_t> rec, Event& e) {
  gs_event h;
  if (rec.size() < sizeof h)
    return fail(ErrorKind::Internal, "ring buffer record of " + std::to_string(rec.size()) + " bytes, shorter than an event header");
  std::memcpy(&h, rec.data(), sizeof h);
  if (h.size > rec.size() || h.site >= GS_SITE_KIND_COUNT)
    return fail(ErrorKind::Internal, "malformed event record (size " + std::to_string(h.size) + " of " +
                                         std::to_string(rec.size()) + ", site " + std::to_string(h.site) + ")");
  e.tsNs = h.ts_ns;
  e.pid = h.pid;
  e.tid = h.tid;
  e.g = h.g;
  e.goid = h.goid;
  e.frame = h.frame;
  e.probeId = h.probe_id;
  e.site = static_cast<SiteKind>(h.site);
  e.ip = h.ip;
  e.sp = h.sp;
  e.retAddr = h.ret_addr;
  e.durationNs = h.duration_ns;
  for (unsigned i = 0; i < GS_NREGS; i++) e.regs[i] = h.regs[i];
  e.blocks.clear();
  e.stack.clear();
  e.stackCut = false;

  size_t pos = sizeof h;
  for (unsigned b = 0; b < h.nblocks; b++) {
    gs_block bh;
    if (pos + sizeof bh > h.size) return fail(ErrorKind::Internal, "malformed event record: block header past the end");
    std::memcpy(&bh, rec.data() + pos, sizeof bh);
    pos += sizeof bh;
    if (pos + bh.len > h.size) return fail(ErrorKind::Internal, "malformed event record: block data past the end");
    CapturedBlock cb;
    cb.fullLen = bh.full_len;
    cb.errnoValue = bh.err < 0 ? -bh.err : bh.err;
    cb.bytes = rec.subspan(pos, bh.len);
    e.blocks.push_back(cb);
    pos += (bh.len + 7u) & ~7u;
  }
  if (h.stack_bytes) {
    if (pos + h.stack_bytes > h.size) return fail(ErrorKind::Internal, "malformed event record: stack past the end");
    std::vector<uint64_t> frames(h.stack_bytes / 8);
    std::memcpy(frames.data(), rec.data() + pos, frames.size() * 8);
    e.stack = completeStack(frames, h.ret_addr);
    e.stackCut = stackIsCut(frames);
  }
  return {};
}

Result<Event> decodeEvent(std::span<const uint8_t> rec) {
  Event e;
  if (auto r = decodeEventInto(rec, e); !r) return r.failure();
  return e;
}

}  // namespace goscope::bpf
