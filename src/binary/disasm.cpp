#include "binary/disasm.hpp"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "binary/x86_insn.hpp"
#include "binary/zydis_decoder.hpp"

namespace goscope {

namespace {

// Only ZydisDecoderDecodeInstruction runs per instruction, with the shared
// minimal-mode decoder (zydis_decoder.hpp): no operand decoding and no text
// formatting (Capstone 4 formatted every instruction as AT&T text, which this
// code never read, and stopped at AVX-512 and other instructions it did not
// know: docs/disassembly.md).

// Why Zydis refused the bytes, in words (ZYDIS_STATUS_*, Status.h).
std::string_view statusText(ZyanStatus s) {
  switch (s) {
    case ZYDIS_STATUS_NO_MORE_DATA: return "the function ends inside an instruction";
    case ZYDIS_STATUS_DECODING_ERROR: return "no x86-64 instruction has this encoding";
    case ZYDIS_STATUS_INSTRUCTION_TOO_LONG: return "longer than 15 bytes";
    case ZYDIS_STATUS_BAD_REGISTER: return "invalid register operand";
    case ZYDIS_STATUS_ILLEGAL_LOCK: return "lock prefix on an instruction that cannot take it";
    case ZYDIS_STATUS_ILLEGAL_LEGACY_PFX: return "legacy prefix before a VEX/EVEX/XOP escape";
    case ZYDIS_STATUS_ILLEGAL_REX: return "REX prefix before a VEX/EVEX/XOP escape";
    case ZYDIS_STATUS_INVALID_MAP: return "invalid opcode map";
    case ZYDIS_STATUS_MALFORMED_EVEX: return "malformed EVEX prefix";
    case ZYDIS_STATUS_MALFORMED_MVEX: return "malformed MVEX prefix";
    case ZYDIS_STATUS_INVALID_MASK: return "invalid mask register";
    default: return "the decoder refused it";
  }
}

// A near RET (c3, c2 imm16), any prefixes; not the far retf (cb, ca).
bool isRet(const ZydisDecodedInstruction& in) {
  return in.mnemonic == ZYDIS_MNEMONIC_RET && in.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY &&
         in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (in.opcode == 0xc3 || in.opcode == 0xc2);
}

UprobeVerdict verdictOf(const std::optional<x86::InsnView>& view) {
  return view ? classifyForUprobe(*view) : UprobeVerdict{UprobeExec::Refused, Hazard::Undecodable};
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

void setBit(std::vector<uint64_t>& bits, uint64_t off) {
  bits[off / 64] |= uint64_t{1} << (off % 64);
}

}  // namespace

Result<FunctionCode> analyzeFunction(std::span<const uint8_t> code, uint64_t entry, DecodeDepth depth,
                                     const InstructionHook* hook) {
  if (code.empty()) return fail(ErrorKind::Usage, "analyzeFunction: no code at " + hex(entry));
  if (entry + code.size() < entry)
    return fail(ErrorKind::Usage, "analyzeFunction: code at " + hex(entry) + " wraps around");
  const ZydisDecoder& zydis = zydisDecoder();

  FunctionCode fn;
  fn.depth = depth;
  fn.entry = entry;
  fn.end = entry + code.size();
  const bool headOnly = depth == DecodeDepth::EntryOnly;
  // A head is at most kPrologueWindow instructions of at most 15 bytes: its
  // bitmap need not cover a long function (start-up allocates one a function).
  const size_t decodable = headOnly ? std::min(code.size(), kPrologueWindow * 15) : code.size();
  fn.boundaryBits.assign((decodable + 63) / 64, 0);

  // The first instructions, parsed, with their verdicts: what the prologue
  // matcher and the entry-probe choice read.
  std::array<DecodedInsn, kPrologueWindow> head;
  std::array<std::optional<x86::InsnView>, kPrologueWindow> headViews;
  std::array<UprobeVerdict, kPrologueWindow> headVerdicts;
  size_t headLen = 0;
  std::optional<GoPrologue> decided;  // EntryOnly: the head's, once it decides the stack check

  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t addr = entry;
  while (left > 0) {
    // The head is all the entry-probe decision reads (go_prologue.hpp).
    if (headOnly && headLen == kPrologueWindow) break;
    // Trailing int3 is padding to the next function, not code (an int3
    // followed by anything else is an instruction of the body).
    if (*p == 0xcc && std::all_of(p, p + left, [](uint8_t b) { return b == 0xcc; })) break;
    const uint64_t at = addr;
    ZydisDecodedInstruction in;
    const ZyanStatus status = ZydisDecoderDecodeInstruction(&zydis, nullptr, p, left, &in);
    if (!ZYAN_SUCCESS(status)) {
      fn.undecodable = at;
      fn.undecodableWhy = statusText(status);
      fn.unsafe.push_back(at), fn.unsafeWhy.push_back(Hazard::Undecodable);
      break;
    }
    const std::span<const uint8_t> bytes(p, in.length);
    if (hook) (*hook)(at, bytes, in);
    p += in.length, left -= in.length, addr += in.length;
    setBit(fn.boundaryBits, at - entry);
    ++fn.instructionCount;

    auto view = x86::parseInsn(bytes);
    const UprobeVerdict verdict = verdictOf(view);
    if (!verdict.safe()) fn.unsafe.push_back(at), fn.unsafeWhy.push_back(verdict.hazard);
    if (!headOnly && isRet(in)) fn.returns.push_back(at);  // a head's RETs would be a partial list
    if (headLen < kPrologueWindow) {
      head[headLen] = DecodedInsn{at, bytes};
      headViews[headLen] = view;
      headVerdicts[headLen] = verdict;
      ++headLen;
      // The entry probe's decision needs the stack check and the entry only:
      // most functions decide it in one to three instructions (start-up).
      if (headOnly) {
        const GoPrologue sofar = recognisePrologue(std::span(head).first(headLen),
                                                   std::span(headViews).first(headLen), entry, false);
        if (sofar.stackCheckDecided) {
          decided = sofar;
          break;
        }
      }
    }
  }
  fn.bodyEnd = fn.undecodable.value_or(addr);
  fn.boundaryBits.resize((fn.bodyEnd - entry + 63) / 64);

  const GoPrologue prologue =
      decided ? *decided
              : recognisePrologue(std::span(head).first(headLen), std::span(headViews).first(headLen), entry, !headOnly);
  fn.prologue = prologue.form;
  fn.stackCheckBranch = prologue.stackCheckBranch;
  fn.morestackTarget = prologue.morestackTarget;
  fn.bodyStart = prologue.bodyStart;

  std::optional<UprobeVerdict> entryVerdict, branchVerdict;
  for (size_t k = 0; k < headLen; k++) {
    if (head[k].address == entry) entryVerdict = headVerdicts[k];
    if (head[k].address == prologue.stackCheckBranch) branchVerdict = headVerdicts[k];
  }
  fn.probe = chooseProbeSite(entry, prologue, entryVerdict, branchVerdict);
  return fn;
}

std::optional<std::string> returnsUnknownReason(const FunctionCode& fn) {
  if (fn.depth == DecodeDepth::EntryOnly)
    return "returns not looked for: only the first " + std::to_string(fn.instructionCount) +
           " instruction(s) were decoded (for the entry probe)";
  if (!fn.undecodable) return std::nullopt;
  return "returns unknown: the bytes at " + hex(*fn.undecodable) + " (entry+" +
         std::to_string(*fn.undecodable - fn.entry) + ") do not decode (" + std::string(fn.undecodableWhy) +
         "), so a RET after them cannot be found";
}

bool isInstructionBoundary(const FunctionCode& fn, uint64_t addr) {
  if (addr < fn.entry || addr >= fn.bodyEnd) return false;
  const uint64_t off = addr - fn.entry;
  return (fn.boundaryBits[off / 64] >> (off % 64)) & 1;
}

Hazard hazardAt(const FunctionCode& fn, uint64_t addr) {
  if (!isInstructionBoundary(fn, addr)) return Hazard::Undecodable;
  auto it = std::lower_bound(fn.unsafe.begin(), fn.unsafe.end(), addr);
  if (it == fn.unsafe.end() || *it != addr) return Hazard::None;
  return fn.unsafeWhy[static_cast<size_t>(it - fn.unsafe.begin())];
}

ProbeSite chooseProbeSite(uint64_t entry, const GoPrologue& prologue,
                          std::optional<UprobeVerdict> entryVerdict,
                          std::optional<UprobeVerdict> branchVerdict) {
  using Kind = ProbeSite::Kind;
  if (prologue.stackCheckBranch && branchVerdict && branchVerdict->safe() &&
      branchVerdict->exec == UprobeExec::Emulated) {
    return {*prologue.stackCheckBranch, Kind::StackCheckBranch,
            "the stack-check jbe at entry+" + std::to_string(*prologue.stackCheckBranch - entry) +
                " is emulated and sees the entry's registers; count only passes with CF|ZF "
                "clear (the other pass goes to morestack and comes back)"};
  }
  if (!entryVerdict) return {entry, Kind::None, "no decodable instruction at the entry"};
  if (!entryVerdict->safe()) return {entry, Kind::None, std::string(describe(entryVerdict->hazard))};
  switch (entryVerdict->exec) {
    case UprobeExec::Emulated:
      return {entry, Kind::EmulatedEntry, "the first instruction is emulated by the kernel"};
    case UprobeExec::Stepped:
      return {entry, Kind::SteppedEntry, "no stack check: the first instruction is single-stepped"};
    case UprobeExec::Refused:
      return {entry, Kind::None, std::string(describe(entryVerdict->hazard))};
  }
  return {entry, Kind::None, "unreachable"};
}

std::string_view kindName(ProbeSite::Kind k) {
  switch (k) {
    case ProbeSite::Kind::StackCheckBranch: return "stack-check-branch";
    case ProbeSite::Kind::EmulatedEntry: return "emulated-entry";
    case ProbeSite::Kind::SteppedEntry: return "stepped-entry";
    case ProbeSite::Kind::CallSites: return "call-sites";
    case ProbeSite::Kind::None: return "none";
  }
  return "?";
}

}  // namespace goscope
