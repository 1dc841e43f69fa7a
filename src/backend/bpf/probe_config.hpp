// What the engine is asked to do, in C++ terms: site kinds, capture steps,
// per-probe actions, attach points. encodeXxx turn them into the structs of
// bpf/goscope_shared.h (pure functions, unit-tested without a kernel).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "goscope_shared.h"
#include "probe/filter_expr.hpp"
#include "util/result.hpp"

namespace goscope::bpf {

// Where an attached address sits in its function. The cookie of every
// attached address is (probe id << 8) | site kind.
enum class SiteKind : uint8_t {
  // The first instruction (single-stepped, ~4 us a hit, or emulated when it
  // is e.g. `push %rbp`). A prologue that grows the stack passes it twice.
  Entry = GS_SITE_ENTRY,
  // The `jbe` 4 bytes after the entry of a Go stack-check prologue (emulated,
  // ~0.35 us). Passes that go to morestack are skipped: a call counts once.
  EntryStackCheck = GS_SITE_ENTRY_STACKCHECK,
  // A RET instruction. Never a uretprobe: they crash Go programs.
  Return = GS_SITE_RETURN,
  // The first instruction of an inlined body (binary/inline_sites.hpp): an
  // entry that no RET follows; counted and traced at the entry only.
  Inlined = GS_SITE_INLINED,
  InlinedFrameless = GS_SITE_INLINED_FRAMELESS,  // in a caller without a frame
  // A `call rel32` of a function probed at its call sites (call_sites.hpp):
  // an entry whose RSP is 8 above the entry's; the BPF program reports the
  // entry's RSP and the call's return address, so events read as at the entry.
  Call = GS_SITE_CALL,
  // The instruction after such a call (its return address): a return site.
  CallReturn = GS_SITE_CALL_RETURN,
  // The first instruction of a function with a stack check, probed there on
  // request (--entry) with a MorestackMark on its jbe: an Entry that the
  // same call passes twice when its stack grows, seen once.
  EntryMarked = GS_SITE_ENTRY_MARKED,
  // The jbe of such a function: marks the passes going to morestack, for
  // the entry to skip the call's second pass. No event, no count.
  MorestackMark = GS_SITE_MORESTACK_MARK,
};
inline bool isInlinedSite(SiteKind k) { return k == SiteKind::Inlined || k == SiteKind::InlinedFrameless; }
inline bool isReturnSite(SiteKind k) { return k == SiteKind::Return || k == SiteKind::CallReturn; }
const char* siteKindName(SiteKind k);

// Registers a capture step can start from: the Go ABIInternal integer
// argument/result registers in order, RSP (arguments passed on the stack:
// the first one at RSP+8 at the entry), and Absolute (offset = an address).
enum class Reg : uint8_t {
  RAX = GS_REG_RAX,
  RBX = GS_REG_RBX,
  RCX = GS_REG_RCX,
  RDI = GS_REG_RDI,
  RSI = GS_REG_RSI,
  R8 = GS_REG_R8,
  R9 = GS_REG_R9,
  R10 = GS_REG_R10,
  R11 = GS_REG_R11,
  RSP = GS_REG_RSP,
  Absolute = GS_REG_ABS,
};
const char* regName(Reg r);
// The n-th Go ABI integer register (0 = RAX ... 8 = R11).
std::optional<Reg> goAbiIntReg(unsigned n);

// One memory read, copied into the event. Registers themselves need no step:
// every event carries the nine ABI registers, RSP and [RSP].
struct MemRead {
  enum class LenFrom : uint8_t {
    Const = GS_LEN_CONST,   // `len` bytes
    Register = GS_LEN_REG,  // lenReg * len bytes (a Go string/slice in registers)
    Memory = GS_LEN_MEM,    // the 8 bytes after the pointer, * len (a string/slice header in memory)
  };
  Reg base = Reg::RAX;
  int64_t offset = 0;       // added to the base
  bool deref = false;       // read a pointer at base+offset, then read at pointer+derefOffset
  int32_t derefOffset = 0;
  LenFrom lenFrom = LenFrom::Const;
  Reg lenReg = Reg::RBX;    // LenFrom::Register: one of RAX..R11
  uint16_t len = 8;         // Const: bytes; Register/Memory: element size
  uint16_t maxLen = 64;     // cap, 1..GS_MAX_READ

  // A Go string (or []byte) passed in two registers: exactly len bytes, capped.
  static MemRead stringInRegs(Reg ptr, Reg len, uint16_t maxLen = 64);
  // A slice's first elements: ptr in one register, length in another.
  static MemRead sliceInRegs(Reg ptr, Reg len, uint16_t elemSize, uint16_t maxLen = 64);
  // `size` bytes at base+offset (a stack slot: base RSP; a field behind a pointer).
  static MemRead at(Reg base, int64_t offset, uint16_t size);
  // A string header (ptr, len) stored in memory at base+offset: its bytes.
  static MemRead stringAt(Reg base, int64_t offset, uint16_t maxLen = 64);
  // `size` bytes at a fixed address (a global; PIE: add the load bias).
  static MemRead absolute(uint64_t address, uint16_t size);
};

struct GlobalRead {
  uint64_t address = 0;  // runtime address (PIE: add the process's load bias)
  uint8_t size = 8;      // 1..8 bytes, little endian
};

struct ProbeConfig {
  bool count = false;          // calls, counted at entry sites
  bool latency = false;        // entry/return paired by goroutine; needs both site kinds attached
  bool eventAtEntry = false;   // an Event per entry
  bool eventAtReturn = false;  // an Event per return (with the duration when `latency`)
  bool userStack = false;      // events carry the user stack
  bool stackCounts = false;    // in-kernel counts per (stack, caller) at entry sites (folded output)
  std::vector<MemRead> entryReads;   // up to GS_MAX_STEPS
  std::vector<MemRead> returnReads;  // up to GS_MAX_STEPS
  std::optional<GlobalRead> readGlobal;  // read at every entry (`count --read VAR`)
  // Events only: 0 or 1 = every call; N = about one call in N (random, decided
  // at the entry; its RET follows it). The cost bound sets it live.
  uint32_t sampleEvery = 0;
  // --filter, bound to this function's arguments (probe/filter_expr.hpp):
  // tested at entry sites before anything else; a call that fails is not
  // sent (nor its RET), and with `countMatching` not counted either.
  std::vector<BoundFilterTerm> filter;
  bool countMatching = false;
};

struct AttachPoint {
  uint64_t fileOffset = 0;  // offset in the ELF file (not a virtual address)
  uint32_t probeId = 0;
  SiteKind site = SiteKind::Entry;
  uint8_t generation = 0;  // 0 or 1: counts only while it is the engine's active one (Engine::detachPoints)
};

// Encoding into the kernel-side structs. Usage errors for values out of range.
Result<gs_read_step> encodeRead(const MemRead& r);
Result<gs_capture_spec> encodeSpec(const std::vector<MemRead>& reads);
uint32_t encodeActions(const ProbeConfig& c);
Result<gs_filter> encodeFilter(const std::vector<BoundFilterTerm>& terms);
uint64_t cookieFor(uint32_t probeId, SiteKind site, uint8_t generation = 0);
inline uint64_t cookieFor(const AttachPoint& p) { return cookieFor(p.probeId, p.site, p.generation); }

}  // namespace goscope::bpf
