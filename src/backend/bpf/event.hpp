// Event: one record from the ring buffer (a probe with eventAtEntry or
// eventAtReturn was hit), decoded. Spans point into the ring buffer and are
// valid only during the poll callback that receives the event.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/bpf/probe_config.hpp"
#include "util/result.hpp"

namespace goscope::bpf {

struct CapturedBlock {
  uint32_t fullLen = 0;              // the length asked for, before the cap
  int errnoValue = 0;                // 0, or the errno of the failed user-memory read
  std::span<const uint8_t> bytes;    // what was read (empty on error)
  bool truncated() const { return bytes.size() < fullLen; }
};

struct Event {
  uint64_t tsNs = 0;     // CLOCK_MONOTONIC (bpf_ktime_get_ns)
  uint32_t pid = 0;      // process (tgid)
  uint32_t tid = 0;      // thread
  uint64_t g = 0;        // the goroutine's g (R14)
  uint64_t goid = 0;     // g.goid (0 when unreadable)
  uint64_t frame = 0;    // g.stack.hi - RSP: equal in the entry and return events of one call
  uint32_t probeId = 0;
  SiteKind site = SiteKind::Entry;
  uint64_t ip = 0;       // the probed address in the process
  uint64_t sp = 0;       // RSP as at the entry (at a call site: RSP - 8, no return address pushed yet)
  uint64_t retAddr = 0;  // [RSP]: the return address into the caller (at a call site: the address after the call)
  int64_t durationNs = -1;  // return events of latency probes whose entry was seen
  std::array<uint64_t, GS_NREGS> regs{};  // RAX RBX RCX RDI RSI R8 R9 R10 R11
  std::vector<CapturedBlock> blocks;      // one per MemRead of the site, in order
  // The user stack, innermost first, with the direct caller (retAddr)
  // inserted after the probed ip: the kernel's frame-pointer walk cannot see
  // it at an entry or RET (RBP then belongs to the caller). Empty unless
  // userStack was asked for.
  std::vector<uint64_t> stack;
  // The kernel filled all GS_MAX_STACK_DEPTH frames: the outer ones are
  // missing (perf_event_max_stack, docs/kernel.md "Stacks").
  bool stackCut = false;

  uint64_t reg(Reg r) const;
  bool isReturn() const { return isReturnSite(site); }
};

// Decodes one ring-buffer record (struct gs_event + blocks + stack).
Result<Event> decodeEvent(std::span<const uint8_t> record);
// The same into `e`, whose vectors keep their capacity: the engine decodes
// every record into one Event (no allocation per event).
Result<void> decodeEventInto(std::span<const uint8_t> record, Event& e);

// A user stack from the kernel (first frame = probed ip) with the direct
// caller inserted as the second frame; zero entries are dropped.
std::vector<uint64_t> completeStack(std::span<const uint64_t> kernelFrames, uint64_t retAddr);

// The kernel stopped at its depth limit: every one of its frames is set.
bool stackIsCut(std::span<const uint64_t> kernelFrames);

}  // namespace goscope::bpf
