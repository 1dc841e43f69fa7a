#include "binary/arg_places.hpp"

#include <Zydis/Zydis.h>

#include <optional>

#include "binary/go_binary.hpp"
#include "binary/zydis_decoder.hpp"

namespace goscope {

namespace {

// Go's integer argument registers in ABIInternal order (abi_layout.hpp).
std::optional<unsigned> goIntRegister(ZydisRegister r) {
  switch (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r)) {
    case ZYDIS_REGISTER_RAX: return 0;
    case ZYDIS_REGISTER_RBX: return 1;
    case ZYDIS_REGISTER_RCX: return 2;
    case ZYDIS_REGISTER_RDI: return 3;
    case ZYDIS_REGISTER_RSI: return 4;
    case ZYDIS_REGISTER_R8: return 5;
    case ZYDIS_REGISTER_R9: return 6;
    case ZYDIS_REGISTER_R10: return 7;
    case ZYDIS_REGISTER_R11: return 8;
    default: return std::nullopt;
  }
}

// X0-X14 (in any width): Go's float argument registers. X15 is the fixed
// zero register of ABIInternal, never an argument.
std::optional<unsigned> goFloatRegister(ZydisRegister r) {
  auto in = [r](ZydisRegister first) { return r >= first && r < first + 15; };
  if (in(ZYDIS_REGISTER_XMM0)) return r - ZYDIS_REGISTER_XMM0;
  if (in(ZYDIS_REGISTER_YMM0)) return r - ZYDIS_REGISTER_YMM0;
  if (in(ZYDIS_REGISTER_ZMM0)) return r - ZYDIS_REGISTER_ZMM0;
  return std::nullopt;
}

struct Decoded {
  ZydisDecodedInstruction in;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

std::optional<Decoded> decodeAt(std::span<const uint8_t> code, uint64_t off) {
  if (off >= code.size()) return std::nullopt;
  Decoded d;
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zydisOperandDecoder(), code.data() + off, code.size() - off, &d.in, d.ops)))
    return std::nullopt;
  return d;
}

ArgPlaces unknown(std::string why) {
  ArgPlaces p;
  p.why = std::move(why);
  return p;
}

// The stores before `CALL runtime.morestack*` at the stack check's target.
ArgPlaces fromSpillBlock(const GoBinary& bin, std::span<const uint8_t> code, uint64_t entry, uint64_t block) {
  ArgPlaces p;
  p.from = ArgPlaces::From::Spills;
  for (uint64_t at = block; at >= entry && at - entry < code.size();) {
    auto d = decodeAt(code, at - entry);
    if (!d) break;
    const auto& in = d->in;
    if (in.mnemonic == ZYDIS_MNEMONIC_CALL) {
      const auto& op = d->ops[0];
      if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative) {
        const uint64_t target = at + in.length + static_cast<uint64_t>(op.imm.value.s);
        const GoFunction* callee = bin.pclntab().functionAt(target);
        if (callee && callee->name.starts_with("runtime.morestack")) {
          if (p.spills.empty()) return unknown("its stack-growth path saves no argument register");
          return p;
        }
      }
      break;
    }
    if (in.mnemonic == ZYDIS_MNEMONIC_NOP) {  // padding (Go 1.27 aligns the call)
      at += in.length;
      continue;
    }
    const auto& dst = d->ops[0];
    const auto& src = d->ops[1];
    if (in.operand_count_visible != 2 || dst.type != ZYDIS_OPERAND_TYPE_MEMORY || src.type != ZYDIS_OPERAND_TYPE_REGISTER ||
        dst.mem.base != ZYDIS_REGISTER_RSP || dst.mem.index != ZYDIS_REGISTER_NONE || !dst.mem.disp.has_displacement ||
        dst.mem.disp.value < 8)
      break;
    ArgSpill s;
    // At the stack check the frame is not yet made: 8(SP) is the first byte
    // of the argument frame.
    s.offset = static_cast<uint32_t>(dst.mem.disp.value - 8);
    s.size = static_cast<uint8_t>(dst.size / 8);
    if (auto r = goIntRegister(src.reg.value)) {
      s.reg = *r;
    } else if (auto x = goFloatRegister(src.reg.value)) {
      s.reg = *x;
      s.isFloat = true;
    } else {
      break;
    }
    p.spills.push_back(s);
    at += in.length;
  }
  return unknown("its stack-growth path is not the compiler's (stores, then CALL runtime.morestack)");
}

void wordsOf(const std::vector<ArgInfoItem>& items, std::vector<const ArgInfoItem*>& out) {
  for (const auto& i : items) {
    if (i.kind == ArgInfoItem::Kind::Word) out.push_back(&i);
    else if (i.kind == ArgInfoItem::Kind::Group) wordsOf(i.items, out);
  }
}

// A function without a stack check: every instruction of its body is read
// for a float argument register or an access to its argument frame. Two
// passes: the first finds the stores that spill word k from its register k
// to its own slot, the second accepts frame accesses only to those slots.
ArgPlaces fromFramelessCode(const GoBinary& bin, const GoFunction& fn, std::span<const uint8_t> code, uint64_t bodyEnd,
                            const std::vector<ArgInfoItem>& args) {
  std::vector<const ArgInfoItem*> words;
  wordsOf(args, words);
  if (words.size() > 9) return unknown("it never grows its stack and has more words than integer registers");
  std::vector<bool> spilled(words.size(), false);
  // The argument frame offset a memory operand reaches, if it is in the frame.
  auto frameOffset = [&](const ZydisDecodedOperand& op, uint64_t at, std::string& why) -> std::optional<int64_t> {
    if (op.mem.base == ZYDIS_REGISTER_RBP && op.mem.disp.value > 0) {
      why = "it never grows its stack and reads memory above its frame pointer";
      return std::nullopt;
    }
    if (op.mem.base != ZYDIS_REGISTER_RSP) return std::nullopt;
    auto delta = bin.pclntab().spDelta(fn, at);
    if (!delta) {
      why = "its stack pointer's movement is not in the binary";
      return std::nullopt;
    }
    const int64_t fromEntry = op.mem.disp.value - *delta;  // [RSP+0] at the entry is the return address
    if (fromEntry < 8) return std::nullopt;
    return fromEntry - 8;
  };
  auto wordAt = [&](int64_t off) -> std::optional<size_t> {
    for (size_t k = 0; k < words.size(); k++)
      if (words[k]->offset == off) return k;
    return std::nullopt;
  };
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t at = fn.entry; at < bodyEnd;) {
      auto d = decodeAt(code, at - fn.entry);
      if (!d) return unknown("its code does not decode");
      const bool isMov = d->in.mnemonic == ZYDIS_MNEMONIC_MOV && d->in.operand_count_visible == 2;
      for (unsigned i = 0; i < d->in.operand_count; i++) {
        const auto& op = d->ops[i];
        if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && goFloatRegister(op.reg.value))
          return unknown("it never grows its stack and uses float registers, so which words are floats is not known");
        if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
        std::string why;
        auto off = frameOffset(op, at, why);
        if (!why.empty()) return unknown(why);
        if (!off) continue;
        auto k = wordAt(*off);
        const bool store = isMov && i == 0 && d->ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
        const bool load = isMov && i == 1 && d->ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER;
        if (pass == 0) {
          if (store && k && goIntRegister(d->ops[1].reg.value) == *k && op.size / 8 == words[*k]->size) spilled[*k] = true;
        } else if (!k || !spilled[*k] || !(store || load)) {
          return unknown("it never grows its stack and uses its argument frame other than to save a word's register, "
                         "so which words are on the stack is not known");
        }
      }
      at += d->in.length;
    }
  }
  ArgPlaces p;
  p.from = ArgPlaces::From::IntegerOrder;
  return p;
}

}  // namespace

ArgPlaces argPlaces(const GoBinary& bin, const GoFunction& fn, const std::vector<ArgInfoItem>& args) {
  auto code = bin.analyze(fn, DecodeDepth::Whole);
  if (!code) return unknown("its code cannot be read: " + code.error().message);
  if (code->undecodable) return unknown("its code does not decode");
  auto bytes = bin.elf().readVaddr(fn.entry, fn.end - fn.entry);
  if (!bytes) return unknown("its code is not in the file");
  if (code->morestackTarget) return fromSpillBlock(bin, *bytes, fn.entry, *code->morestackTarget);
  return fromFramelessCode(bin, fn, *bytes, code->bodyEnd, args);
}

}  // namespace goscope
