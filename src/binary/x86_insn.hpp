// InsnView: the encoding facts of one already-decoded x86-64 instruction
// (legacy prefixes, REX, VEX/EVEX/XOP escape, opcode map and byte, ModRM),
// read from its raw bytes. Zydis gives us instruction lengths (and whether
// the bytes are an instruction at all); the uprobe rules and the Go prologue
// matcher need exactly these facts in the terms the kernel's own decoder
// (arch/x86/lib/insn.c) uses -- OPCODE1 after a VEX escape, a REX that counts
// only right before the opcode -- so they are read here from the bytes Zydis
// delimited. Pure: no decoder library, so unit tests feed it hand-assembled bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace goscope::x86 {

// One bit per legacy prefix byte.
enum Prefix : uint16_t {
  kLock = 1 << 0,      // f0
  kRepne = 1 << 1,     // f2
  kRep = 1 << 2,       // f3
  kSegEs = 1 << 3,     // 26
  kSegCs = 1 << 4,     // 2e
  kSegSs = 1 << 5,     // 36
  kSegDs = 1 << 6,     // 3e
  kSegFs = 1 << 7,     // 64
  kSegGs = 1 << 8,     // 65
  kOpSize = 1 << 9,    // 66
  kAddrSize = 1 << 10  // 67
};

enum class Encoding : uint8_t { Legacy, Vex, Evex, Xop };
enum class OpMap : uint8_t { Primary, Map0F, Map0F38, Map0F3A, Other };

// The general-purpose registers in hardware numbering (REX-extended).
enum Reg : uint8_t { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

// A decoded ModRM (+SIB, displacement) operand.
struct ModRM {
  uint8_t mod = 0;
  uint8_t reg = 0;              // REX.R-extended
  uint8_t rm = 0;               // REX.B-extended; meaningful as a register only when mod == 3
  std::optional<uint8_t> base;  // memory base register (none for rip-relative or disp32-only)
  std::optional<uint8_t> index;
  uint8_t scale = 1;
  bool ripRelative = false;
  int32_t disp = 0;
  uint8_t length = 0;  // bytes of ModRM + SIB + displacement

  bool isRegister() const { return mod == 3; }
  // A plain `disp(%base)` memory operand with no index.
  bool isBaseDisp(uint8_t reg, int32_t d) const {
    return mod != 3 && base == reg && !index && disp == d;
  }
};

struct InsnView {
  std::span<const uint8_t> bytes;  // the whole instruction
  uint16_t prefixes = 0;           // Prefix bits
  uint8_t rex = 0;                 // 0 when absent (only a REX right before the opcode counts)
  uint8_t regExt = 0;              // R,X,B (bits 2,1,0) from REX or a VEX/EVEX/XOP escape
  Encoding encoding = Encoding::Legacy;
  OpMap map = OpMap::Primary;
  uint8_t opcode = 0;       // the opcode byte within its map
  uint8_t opcodeIndex = 0;  // where that byte sits in `bytes`

  size_t length() const { return bytes.size(); }
  bool has(Prefix p) const { return (prefixes & p) != 0; }
  bool rexW() const { return rex & 8; }
  bool rexR() const { return rex & 4; }
  bool rexX() const { return rex & 2; }
  bool rexB() const { return rex & 1; }
  bool isLegacy(OpMap m, uint8_t op) const {
    return encoding == Encoding::Legacy && map == m && opcode == op;
  }
  // The first opcode byte as the kernel's decoder reports it (OPCODE1): 0x0f for
  // legacy two- and three-byte opcodes, the opcode itself after a VEX/EVEX escape.
  uint8_t kernelOpcode1() const;
  // Decodes the ModRM that follows the opcode; the caller must know that this
  // opcode has one. nullopt when the bytes are too short.
  std::optional<ModRM> modrm() const;
  // The bytes after the opcode (ModRM, immediates...).
  std::span<const uint8_t> afterOpcode() const { return bytes.subspan(opcodeIndex + 1u); }
};

// nullopt when the bytes end before an opcode byte.
std::optional<InsnView> parseInsn(std::span<const uint8_t> bytes);

}  // namespace goscope::x86
