// From value layouts to the memory reads the BPF engine makes at a probe
// site, and the record of which captured block decodes which part of which
// value. Registers need no read (every event carries RAX..R11, RSP, [RSP]);
// what lives behind them does:
//  - a string's bytes: exactly `len` bytes (Go strings have no NUL), capped;
//  - a slice's first elements (its length and capacity are in the header);
//  - a non-empty interface's dynamic type: itab._type (the word at itab+8);
//    an empty interface's type word is the _type itself, no read needed;
//  - a value passed on the stack: its bytes at RSP+offset (values next to
//    each other share one read, up to 256 bytes: a function's stack
//    arguments are consecutive, and each read counts against the 8);
// and, when reads are left over: what a pointer argument points to (a struct
// or a scalar, up to 256 bytes) and its string fields, an `error`'s message
// when its dynamic type keeps it as its first field (*errors.errorString,
// *fmt.wrapError), the elements of a []string.
//
// The engine makes at most GS_MAX_STEPS (8) reads per site, each at most 256
// bytes, one pointer dereference deep. Reads go to values in argument order,
// the needed ones (above) first for every value, the extras after; what does
// not fit prints as `<not captured>`. Arguments use the entry site's reads,
// results the return site's.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/bpf/probe_config.hpp"
#include "probe/abi_layout.hpp"
#include "util/result.hpp"

namespace goscope {

struct CaptureOptions {
  uint16_t maxString = 64;    // bytes of a string, 1..256
  unsigned maxElems = 4;      // first elements of a slice (and of an array passed on the stack)
  bool derefPointers = true;  // extras: pointees of pointer arguments and their string fields
  bool errorText = true;      // extras: an error's message, for the dynamic types that keep it first
};

// What one captured block holds, for one value.
struct BlockUse {
  enum class What : uint8_t {
    ValueBytes,     // a stack-passed value's bytes (memOffset 0; at most 256)
    StringBytes,    // the bytes of the string whose header is at memOffset
    SliceElems,     // the first elements of the slice whose header is at memOffset
    DynType,        // the _type address of the non-empty interface at memOffset (from its itab)
    Pointee,        // the bytes the pointer at memOffset points to
    PointeeString,  // the bytes of the string field at offset `index` of that pointee
    ErrorText,      // the bytes of the string at offset 0 of what the interface at memOffset points to
    ElemString,     // the bytes of element `index` of the []string at memOffset
  };
  What what = What::ValueBytes;
  uint64_t memOffset = 0;  // in the value's in-memory layout (ValuePart::memOffset)
  uint32_t index = 0;
  int block = -1;          // index into bpf::Event::blocks of the site's events
  uint32_t blockOffset = 0;  // ValueBytes: where in the block the value's bytes start (a shared read)
};

struct ValueCapture {
  std::vector<BlockUse> uses;
  bool complete = true;  // false: reads it needs did not fit; those parts print <not captured>
};

struct CapturePlan {
  std::vector<bpf::MemRead> entryReads;   // for ProbeConfig::entryReads
  std::vector<bpf::MemRead> returnReads;  // for ProbeConfig::returnReads
  std::vector<ValueCapture> values;       // parallel to the layouts
  size_t incomplete = 0;                  // values with something left out

  const BlockUse* find(size_t value, BlockUse::What what, uint64_t memOffset, uint32_t index = 0) const;
};

// Errors: Usage when the options are out of range.
Result<CapturePlan> planCaptures(const std::vector<ValueLayout>& layout, const CaptureOptions& options = {});

}  // namespace goscope
