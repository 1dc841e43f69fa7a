// The two encodings pclntab uses for everything that varies along a function's
// code: unsigned LEB128 varints, and pc-value tables built from them. Pure
// functions on byte spans, so they are unit-tested on hand-made bytes.
//
// A pc-value table (runtime/symtab.go: step, pcvalue) is a sequence of pairs
// (value delta, pc delta): the value delta is zig-zag encoded, the pc delta is
// multiplied by the architecture's pc quantum (1 on amd64). The value starts
// at -1 and the pc at the function's entry; each pair says "the new value
// holds from the current pc up to current pc + pc delta". A value delta of 0
// ends the table, except in the first pair (a function whose first value is
// -1 still needs a first run).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace goscope::pcln {

// Reads one varint at buf[pos], advancing pos. Go only stores uint32 values
// this way; more than 5 bytes, or running off the end, is malformed (nullopt).
std::optional<uint32_t> readUvarint(std::span<const uint8_t> buf, size_t& pos);

// Zig-zag decoding: 0,1,2,3,4 -> 0,-1,1,-2,2.
constexpr int32_t unzigzag(uint32_t v) { return static_cast<int32_t>((v & 1) ? ~(v >> 1) : (v >> 1)); }

// One run of a pc-value table: value holds for pcs in [start, end).
struct PcValueRun {
  uint64_t start = 0;
  uint64_t end = 0;
  int32_t value = -1;
};

// Walks a pc-value table run by run.
class PcValueDecoder {
 public:
  // table: the pctab bytes starting at the table's offset (may extend further;
  // the terminator bounds it). entry: the function's entry pc.
  PcValueDecoder(std::span<const uint8_t> table, uint64_t entry, uint32_t quantum = 1)
      : table_(table), pc_(entry), quantum_(quantum) {}

  // Fills run with the next run; false at the end of the table, or when the
  // bytes are malformed (then malformed() is true).
  bool next(PcValueRun& run);
  bool malformed() const { return malformed_; }

 private:
  std::span<const uint8_t> table_;
  size_t pos_ = 0;
  uint64_t pc_;
  int32_t value_ = -1;
  uint32_t quantum_;
  bool first_ = true;
  bool malformed_ = false;
};

// The value in effect at target, as the runtime's pcvalue computes it; nullopt
// when target lies outside the table or the table is malformed.
std::optional<int32_t> pcValueAt(std::span<const uint8_t> table, uint64_t entry, uint64_t target,
                                 uint32_t quantum = 1);

// pcValueAt for many targets in one walk of the table: out[i] is
// pcValueAt(table, entry, targets[i], quantum). A function with hundreds of
// inlined calls asks for each call's file, line and parent: one walk per
// table instead of one per call (start-up).
std::vector<std::optional<int32_t>> pcValuesAt(std::span<const uint8_t> table, uint64_t entry,
                                               std::span<const uint64_t> targets, uint32_t quantum = 1);

// For each of `targets` (ascending), the start of the table's run that holds
// it, in one walk; nullopt for a target outside the table (or after a
// malformed byte). A run starts where the compiler emitted a new value: at
// an instruction, since the tables are built instruction by instruction.
std::vector<std::optional<uint64_t>> runStartsAt(std::span<const uint8_t> table, uint64_t entry,
                                                 std::span<const uint64_t> targets, uint32_t quantum = 1);

// The largest value anywhere in the table (nullopt for an empty table): how many
// entries an inline tree has is known only this way, since the tree itself has
// no length.
std::optional<int32_t> pcValueMax(std::span<const uint8_t> table, uint64_t entry, uint32_t quantum = 1);

}  // namespace goscope::pcln
