#include "binary/dwarf_location.hpp"

#include <dwarf.h>

#include <array>
#include <cstdio>
#include <optional>

namespace goscope {

std::string_view x86RegisterName(int r) {
  static constexpr std::array<std::string_view, 17> kGeneral = {
      "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
      "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
  static constexpr std::array<std::string_view, 16> kXmm = {
      "xmm0", "xmm1", "xmm2",  "xmm3",  "xmm4",  "xmm5",  "xmm6",  "xmm7",
      "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"};
  if (r >= 0 && r <= 16) return kGeneral[static_cast<size_t>(r)];
  if (r >= 17 && r <= 32) return kXmm[static_cast<size_t>(r - 17)];
  return {};
}

std::string_view LocationPiece::regName() const {
  return kind == Kind::Register ? x86RegisterName(dwarfReg) : std::string_view{};
}

static std::string hexOp(uint8_t atom) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "DW_OP_0x%02x", atom);
  return buf;
}

namespace {

struct ByteReader {
  std::span<const uint8_t> b;
  size_t pos = 0;
  bool ok = true;

  uint64_t fixed(size_t n) {
    if (pos + n > b.size()) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= uint64_t{b[pos + i]} << (8 * i);  // little-endian
    pos += n;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (pos >= b.size() || shift > 63) {
        ok = false;
        return 0;
      }
      uint8_t byte = b[pos++];
      v |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) return v;
    }
  }
  uint64_t sleb() {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t byte = 0;
    do {
      if (pos >= b.size() || shift > 63) {
        ok = false;
        return 0;
      }
      byte = b[pos++];
      v |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) v |= ~uint64_t{0} << shift;  // sign-extend
    return v;
  }
};

}  // namespace

std::vector<DwarfOp> parseExpression(std::span<const uint8_t> bytes) {
  std::vector<DwarfOp> ops;
  ByteReader r{bytes};
  while (r.pos < bytes.size()) {
    DwarfOp op{bytes[r.pos++]};
    uint8_t a = op.atom;
    if (a == DW_OP_addr) op.number = r.fixed(8);
    else if (a == DW_OP_const1u || a == DW_OP_const1s) op.number = r.fixed(1);
    else if (a == DW_OP_const2u || a == DW_OP_const2s) op.number = r.fixed(2);
    else if (a == DW_OP_const4u || a == DW_OP_const4s) op.number = r.fixed(4);
    else if (a == DW_OP_const8u || a == DW_OP_const8s) op.number = r.fixed(8);
    else if (a == DW_OP_constu || a == DW_OP_plus_uconst || a == DW_OP_regx || a == DW_OP_piece) op.number = r.uleb();
    else if (a == DW_OP_consts || a == DW_OP_fbreg || (a >= DW_OP_breg0 && a <= DW_OP_breg31)) op.number = r.sleb();
    else if (a == DW_OP_bregx) {
      op.number = r.uleb();
      op.number2 = r.sleb();
    } else if ((a >= DW_OP_lit0 && a <= DW_OP_lit31) || (a >= DW_OP_reg0 && a <= DW_OP_reg31) ||
               a == DW_OP_call_frame_cfa || a == DW_OP_plus || a == DW_OP_minus || a == DW_OP_deref ||
               a == DW_OP_stack_value || a == DW_OP_dup || a == DW_OP_drop || a == DW_OP_nop) {
      // no operands
    } else {
      ops.push_back(op);  // operands unknown: nothing after it can be parsed
      return ops;
    }
    if (!r.ok) {
      ops.push_back(DwarfOp{a});  // truncated operand: keep the atom so it reads as unsupported
      ops.back().atom = 0xff;
      return ops;
    }
    ops.push_back(op);
  }
  return ops;
}

// Offsets come from the binary: a hostile or corrupt one can add up past
// INT64_MAX, which as signed arithmetic is undefined behaviour (found by
// fuzzing, tests/fuzz/dwarf_location/regressions/). Wrap, as DWARF's own
// address arithmetic does.
static int64_t wrappingAdd(int64_t a, uint64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + b); }

std::vector<LocationPiece> decodeLocation(std::span<const DwarfOp> ops, bool frameBaseIsCfa) {
  std::vector<LocationPiece> out;
  std::optional<LocationPiece> cur;  // the location being built for the current piece
  auto unsupported = [&](uint8_t atom) {
    if (cur && cur->kind == LocationPiece::Kind::Unsupported) return;  // keep the first culprit
    LocationPiece p;
    p.kind = LocationPiece::Kind::Unsupported;
    p.op = hexOp(atom);
    cur = p;
  };

  for (size_t i = 0; i < ops.size(); i++) {
    const DwarfOp& op = ops[i];
    if (op.atom == DW_OP_piece) {
      // A piece with no location before it is a hole: optimized out or padding.
      LocationPiece p = cur.value_or(LocationPiece{});
      p.size = op.number;
      out.push_back(std::move(p));
      cur.reset();
      continue;
    }
    if (cur && cur->kind == LocationPiece::Kind::Unsupported) continue;

    if (op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) {
      cur = LocationPiece{.kind = LocationPiece::Kind::Register, .dwarfReg = op.atom - DW_OP_reg0};
    } else if (op.atom == DW_OP_regx) {
      cur = LocationPiece{.kind = LocationPiece::Kind::Register, .dwarfReg = static_cast<int>(op.number)};
    } else if (op.atom == DW_OP_call_frame_cfa) {
      cur = LocationPiece{.kind = LocationPiece::Kind::Stack, .cfaOffset = 0};
    } else if (op.atom == DW_OP_fbreg) {
      if (!frameBaseIsCfa) {
        unsupported(op.atom);
        continue;
      }
      cur = LocationPiece{.kind = LocationPiece::Kind::Stack, .cfaOffset = static_cast<int64_t>(op.number)};
    } else if (op.atom == DW_OP_plus_uconst && cur && cur->kind == LocationPiece::Kind::Stack) {
      cur->cfaOffset = wrappingAdd(cur->cfaOffset, op.number);
    } else if (op.atom == DW_OP_consts && cur && cur->kind == LocationPiece::Kind::Stack &&
               i + 1 < ops.size() && ops[i + 1].atom == DW_OP_plus) {
      cur->cfaOffset = wrappingAdd(cur->cfaOffset, op.number);
      i++;
    } else if (op.atom == DW_OP_addr) {
      cur = LocationPiece{.kind = LocationPiece::Kind::Address, .address = op.number};
    } else {
      unsupported(op.atom);
    }
  }
  if (cur) out.push_back(std::move(*cur));  // a location without DW_OP_piece: the whole value
  return out;
}

bool coversExactly(const std::vector<LocationPiece>& pieces, uint64_t size) {
  if (pieces.size() == 1 && pieces[0].size == 0) return true;
  uint64_t total = 0;
  for (const auto& p : pieces) {
    if (p.size == 0) return false;  // a whole-value location among pieces
    total += p.size;
  }
  return total == size;
}

std::string describe(const LocationPiece& p) {
  std::string s;
  char buf[64];
  switch (p.kind) {
    case LocationPiece::Kind::Register: {
      auto n = p.regName();
      if (n.empty()) {
        std::snprintf(buf, sizeof buf, "reg%d", p.dwarfReg);
        s = buf;
      } else {
        s = std::string(n);
      }
      break;
    }
    case LocationPiece::Kind::Stack:
      std::snprintf(buf, sizeof buf, "cfa%+lld", static_cast<long long>(p.cfaOffset));
      s = p.cfaOffset == 0 ? "cfa" : buf;
      break;
    case LocationPiece::Kind::Address:
      std::snprintf(buf, sizeof buf, "addr 0x%llx", static_cast<unsigned long long>(p.address));
      s = buf;
      break;
    case LocationPiece::Kind::Absent: s = "-"; break;
    case LocationPiece::Kind::Unsupported: s = "?" + p.op; break;
  }
  if (p.size) s += ":" + std::to_string(p.size);
  return s;
}

std::string describe(const std::vector<LocationPiece>& pieces) {
  if (pieces.empty()) return "-";
  std::string s;
  for (size_t i = 0; i < pieces.size(); i++) {
    if (i) s += " | ";
    s += describe(pieces[i]);
  }
  return s;
}

}  // namespace goscope
