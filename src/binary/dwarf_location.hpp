// Where a variable lives, decoded from a DWARF location expression into the
// few shapes Go's compiler emits: a register, a stack slot relative to the
// canonical frame address (CFA), a static address, or "not available", each
// possibly one DW_OP_piece of a value split across several places.
//
// Go 1.19 (regabi) describes parameters with location lists: at the entry a
// parameter is in the ABI registers (a string as two pieces, RAX then RBX),
// after the prologue it may move to its spill slot (DW_OP_fbreg, and the frame
// base of every Go function is DW_OP_call_frame_cfa, so fbreg N is CFA+N).
// Kept free of libdw types so the decoding is unit-tested on plain op lists.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace goscope {

struct LocationPiece {
  enum class Kind {
    Register,     // the value (piece) is in dwarfReg
    Stack,        // in memory at CFA + cfaOffset (at a Go entry, CFA = RSP + 8)
    Address,      // in memory at a static address (DW_OP_addr, package variables)
    Absent,       // optimized out or padding: an empty DW_OP_piece
    Unsupported,  // an expression goscope does not model; see `op`
  };
  Kind kind = Kind::Absent;
  int dwarfReg = -1;      // Register: DWARF number (x86-64 psABI numbering)
  int64_t cfaOffset = 0;  // Stack
  uint64_t address = 0;   // Address
  uint64_t size = 0;      // bytes covered (DW_OP_piece); 0 = the whole value
  std::string op;         // Unsupported: the first operation we could not model

  std::string_view regName() const;  // "rax", "xmm0"; "" unless a known Register
  bool operator==(const LocationPiece&) const = default;
};

// One entry of a location list: [lowPc, highPc) and where the value is there.
// A single location expression (not a list) is valid for the whole function
// and is stored as the range [0, UINT64_MAX).
struct LocationRange {
  uint64_t lowPc = 0;
  uint64_t highPc = UINT64_MAX;
  std::vector<LocationPiece> pieces;  // empty: the value is not available here

  bool contains(uint64_t pc) const { return pc >= lowPc && pc < highPc; }
};

// A DWARF operation as libdw hands it out (Dwarf_Op without the offset).
struct DwarfOp {
  uint8_t atom = 0;
  uint64_t number = 0;
  uint64_t number2 = 0;
};

// Parses the bytes of a DWARF expression. Go writes single location
// expressions as DW_FORM_block1 even in DWARF 4 units, which libdw refuses
// (DWARF 4 wants exprloc), so goscope parses those bytes itself. Operations
// whose operands it does not know end the list with that operation, which
// decodeLocation then reports as Unsupported.
std::vector<DwarfOp> parseExpression(std::span<const uint8_t> bytes);

// Decodes one location expression. frameBaseIsCfa says whether the function's
// DW_AT_frame_base is DW_OP_call_frame_cfa (always, for Go); when it is not,
// DW_OP_fbreg cannot be expressed as a CFA offset and becomes Unsupported.
std::vector<LocationPiece> decodeLocation(std::span<const DwarfOp> ops, bool frameBaseIsCfa = true);

// Whether the pieces describe exactly `size` bytes: one whole-value piece, or
// piece sizes that add up to `size`. Go's compiler sometimes emits piece
// lists that do not (golang/go#45281, #72053; Go 1.19 writes 4 pieces,
// RBX RBX RCX RDI, for a 24-byte []T parameter of a generic function that
// switches on its type): decoders should check before trusting a location.
bool coversExactly(const std::vector<LocationPiece>& pieces, uint64_t size);

// x86-64 psABI DWARF register names: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
// 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip, 17-32 xmm0-xmm15; "" for other numbers.
std::string_view x86RegisterName(int dwarfReg);

// "rax", "cfa+8", "addr 0x558060", "-" (absent); pieces joined with " | " and
// sized when split, e.g. "rax:8 | rbx:8".
std::string describe(const LocationPiece& piece);
std::string describe(const std::vector<LocationPiece>& pieces);

}  // namespace goscope
