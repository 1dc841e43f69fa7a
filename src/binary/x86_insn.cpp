#include "binary/x86_insn.hpp"

namespace goscope::x86 {

namespace {

uint16_t legacyPrefixBit(uint8_t b) {
  switch (b) {
    case 0xf0: return kLock;
    case 0xf2: return kRepne;
    case 0xf3: return kRep;
    case 0x26: return kSegEs;
    case 0x2e: return kSegCs;
    case 0x36: return kSegSs;
    case 0x3e: return kSegDs;
    case 0x64: return kSegFs;
    case 0x65: return kSegGs;
    case 0x66: return kOpSize;
    case 0x67: return kAddrSize;
    default: return 0;
  }
}

OpMap vexMap(uint8_t mmmmm) {
  switch (mmmmm) {
    case 1: return OpMap::Map0F;
    case 2: return OpMap::Map0F38;
    case 3: return OpMap::Map0F3A;
    default: return OpMap::Other;
  }
}

}  // namespace

std::optional<InsnView> parseInsn(std::span<const uint8_t> bytes) {
  InsnView v;
  v.bytes = bytes;
  size_t i = 0;
  const size_t n = bytes.size();
  // Legacy prefixes and REX in any order; a REX only counts when the opcode
  // (or an escape) follows it directly, as in the hardware.
  for (; i < n; ++i) {
    if (uint16_t bit = legacyPrefixBit(bytes[i])) {
      v.prefixes |= bit;
      v.rex = 0;
    } else if ((bytes[i] & 0xf0) == 0x40) {
      v.rex = bytes[i];
    } else {
      break;
    }
  }
  if (i >= n) return std::nullopt;
  v.regExt = v.rex & 7;

  const uint8_t b = bytes[i];
  // In 64-bit mode c4/c5/62 are always VEX/EVEX; 8f is XOP only when its
  // map-select field is >= 8 (otherwise it is `pop r/m`).
  if (b == 0xc5) {
    if (i + 2 >= n) return std::nullopt;
    v.encoding = Encoding::Vex;
    v.regExt = (bytes[i + 1] & 0x80) ? 0 : 4;
    v.map = OpMap::Map0F;
    v.opcodeIndex = static_cast<uint8_t>(i + 2);
  } else if (b == 0xc4 || (b == 0x8f && i + 1 < n && (bytes[i + 1] & 0x1f) >= 8)) {
    if (i + 3 >= n) return std::nullopt;
    v.encoding = b == 0xc4 ? Encoding::Vex : Encoding::Xop;
    v.regExt = static_cast<uint8_t>((~bytes[i + 1] >> 5) & 7);
    v.map = b == 0xc4 ? vexMap(bytes[i + 1] & 0x1f) : OpMap::Other;
    v.opcodeIndex = static_cast<uint8_t>(i + 3);
  } else if (b == 0x62) {
    if (i + 4 >= n) return std::nullopt;
    v.encoding = Encoding::Evex;
    v.regExt = static_cast<uint8_t>((~bytes[i + 1] >> 5) & 7);
    v.map = vexMap(bytes[i + 1] & 7);
    v.opcodeIndex = static_cast<uint8_t>(i + 4);
  } else if (b == 0x0f) {
    if (i + 1 >= n) return std::nullopt;
    if (bytes[i + 1] == 0x38 || bytes[i + 1] == 0x3a) {
      if (i + 2 >= n) return std::nullopt;
      v.map = bytes[i + 1] == 0x38 ? OpMap::Map0F38 : OpMap::Map0F3A;
      v.opcodeIndex = static_cast<uint8_t>(i + 2);
    } else {
      v.map = OpMap::Map0F;
      v.opcodeIndex = static_cast<uint8_t>(i + 1);
    }
  } else {
    v.opcodeIndex = static_cast<uint8_t>(i);
  }
  if (v.encoding != Encoding::Legacy) v.rex = 0;
  v.opcode = bytes[v.opcodeIndex];
  return v;
}

uint8_t InsnView::kernelOpcode1() const {
  if (encoding == Encoding::Legacy && map != OpMap::Primary) return 0x0f;
  return opcode;
}

std::optional<ModRM> InsnView::modrm() const {
  auto rest = afterOpcode();
  if (rest.empty()) return std::nullopt;
  ModRM m;
  const uint8_t b = rest[0];
  const bool extR = regExt & 4, extX = regExt & 2, extB = regExt & 1;
  m.mod = b >> 6;
  m.reg = static_cast<uint8_t>(((b >> 3) & 7) | (extR ? 8 : 0));
  m.rm = static_cast<uint8_t>((b & 7) | (extB ? 8 : 0));
  size_t len = 1;
  if (m.mod == 3) {
    m.length = 1;
    return m;
  }
  bool disp32Only = false;
  if ((b & 7) == 4) {  // SIB follows
    if (rest.size() < 2) return std::nullopt;
    const uint8_t sib = rest[1];
    len = 2;
    m.scale = static_cast<uint8_t>(1u << (sib >> 6));
    const uint8_t index = static_cast<uint8_t>(((sib >> 3) & 7) | (extX ? 8 : 0));
    if (index != RSP) m.index = index;  // index 100 without REX.X means none
    if ((sib & 7) == 5 && m.mod == 0) {
      disp32Only = true;
    } else {
      m.base = static_cast<uint8_t>((sib & 7) | (extB ? 8 : 0));
    }
  } else if ((b & 7) == 5 && m.mod == 0) {
    m.ripRelative = true;
  } else {
    m.base = m.rm;
  }
  size_t dispBytes = m.mod == 1 ? 1 : (m.mod == 2 || m.ripRelative || disp32Only) ? 4 : 0;
  if (rest.size() < len + dispBytes) return std::nullopt;
  if (dispBytes == 1) {
    m.disp = static_cast<int8_t>(rest[len]);
  } else if (dispBytes == 4) {
    uint32_t d = 0;
    for (size_t k = 0; k < 4; ++k) d |= static_cast<uint32_t>(rest[len + k]) << (8 * k);
    m.disp = static_cast<int32_t>(d);
  }
  m.length = static_cast<uint8_t>(len + dispBytes);
  return m;
}

}  // namespace goscope::x86
