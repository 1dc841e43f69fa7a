// Where runtime.g keeps the goroutine id: found in the binary itself. Go
// moved it between releases (offset 152 for Go 1.16-1.22 and 1.25-1.27, 160
// for 1.23-1.24: docs/go-runtime.md), so a stripped binary cannot be read by
// assumption. DWARF says it when present; otherwise runtime.newproc1 shows
// it: `newg.goid = pp.goidcache; pp.goidcache++` compiles to a load of
// p.goidcache, a store of that register into the new g, and an `incq` of
// p.goidcache.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "binary/go_binary.hpp"

namespace goscope {

struct GoidOffset {
  std::optional<uint32_t> offset;  // none: not found (goroutine ids are then unknown)
  std::string how;                 // "DWARF", "runtime.newproc1's store (0x44215c)", or why not found
};

GoidOffset findGoidOffset(const GoBinary& bin);

// The offset the probes use, which `goscope info` shows: findGoidOffset's,
// or when it finds none Go's usual 152, assumed (ids may then be wrong;
// pairing by the g pointer stays right).
struct GoidOffsetInUse {
  uint32_t offset = 152;
  std::string how;       // findGoidOffset's `how`, or "assumed: ..." with why none was found
  bool assumed = false;
};
GoidOffsetInUse goidOffsetInUse(const GoBinary& bin);

// The store in runtime.newproc1's code (bytes at `entry`), or why not.
GoidOffset goidOffsetFromNewproc1(std::span<const uint8_t> code, uint64_t entry, const FunctionCode& fc);

}  // namespace goscope
