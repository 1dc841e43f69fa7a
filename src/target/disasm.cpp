#include "target/disasm.hpp"

#include <capstone/capstone.h>

#include <algorithm>
#include <cstdio>

#include "target/x86_insn.hpp"

namespace goscope {

namespace {

// One capstone handle and instruction buffer per thread, opened on first use:
// cs_open costs more than decoding a small function. Detail mode stays off
// (it costs ~25% more); the facts we need are parsed from the bytes.
class Capstone {
 public:
  Capstone() {
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) != CS_ERR_OK) return;
    insn_ = cs_malloc(handle_);
  }
  ~Capstone() {
    if (insn_) cs_free(insn_, 1);
    if (handle_) cs_close(&handle_);
  }
  Capstone(const Capstone&) = delete;
  Capstone& operator=(const Capstone&) = delete;
  bool ok() const { return insn_ != nullptr; }
  // Decodes one instruction at *code, advancing code/size/address like cs_disasm_iter.
  bool next(const uint8_t** code, size_t* size, uint64_t* address) {
    return cs_disasm_iter(handle_, code, size, address, insn_);
  }

 private:
  csh handle_ = 0;
  cs_insn* insn_ = nullptr;
};

Capstone& capstone() {
  thread_local Capstone cs;
  return cs;
}

bool isRet(const x86::InsnView& v) {
  return v.encoding == x86::Encoding::Legacy && v.map == x86::OpMap::Primary &&
         (v.opcode == 0xc3 || v.opcode == 0xc2);
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

Result<FunctionCode> analyzeFunction(std::span<const uint8_t> code, uint64_t entry) {
  if (code.empty()) return fail(ErrorKind::Usage, "analyzeFunction: no code at " + hex(entry));
  if (entry + code.size() < entry)
    return fail(ErrorKind::Usage, "analyzeFunction: code at " + hex(entry) + " wraps around");
  Capstone& cs = capstone();
  if (!cs.ok()) return fail(ErrorKind::Internal, "capstone: cannot open an x86-64 decoder");

  FunctionCode fn;
  fn.entry = entry;
  fn.end = entry + code.size();
  fn.boundaryBits.assign((code.size() + 63) / 64, 0);

  std::vector<DecodedInsn> head;  // the first instructions, for the prologue matcher
  head.reserve(kPrologueWindow);

  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t addr = entry;
  while (left > 0) {
    // Trailing int3 is padding to the next function, not code (an int3
    // followed by anything else is an instruction of the body).
    if (*p == 0xcc && std::all_of(p, p + left, [](uint8_t b) { return b == 0xcc; })) break;
    const uint8_t* start = p;
    const uint64_t at = addr;
    if (!cs.next(&p, &left, &addr)) {
      fn.undecodable = at;
      fn.unsafe.push_back(at), fn.unsafeWhy.push_back(Hazard::Undecodable);
      break;
    }
    const std::span<const uint8_t> bytes(start, static_cast<size_t>(p - start));
    setBit(fn.boundaryBits, at - entry);
    ++fn.instructionCount;
    if (head.size() < kPrologueWindow) head.push_back(DecodedInsn{at, bytes});

    auto view = x86::parseInsn(bytes);
    const UprobeVerdict verdict = verdictOf(view);
    if (!verdict.safe()) fn.unsafe.push_back(at), fn.unsafeWhy.push_back(verdict.hazard);
    if (view && isRet(*view)) fn.returns.push_back(at);
  }
  fn.bodyEnd = fn.undecodable.value_or(addr);
  fn.boundaryBits.resize((fn.bodyEnd - entry + 63) / 64);

  const GoPrologue prologue = recognisePrologue(head, entry);
  fn.prologue = prologue.form;
  fn.stackCheckBranch = prologue.stackCheckBranch;
  fn.morestackTarget = prologue.morestackTarget;
  fn.bodyStart = prologue.bodyStart;

  std::optional<UprobeVerdict> entryVerdict, branchVerdict;
  for (const DecodedInsn& in : head) {
    const UprobeVerdict verdict = verdictOf(x86::parseInsn(in.bytes));
    if (in.address == entry) entryVerdict = verdict;
    if (in.address == prologue.stackCheckBranch) branchVerdict = verdict;
  }
  fn.probe = chooseProbeSite(entry, prologue, entryVerdict, branchVerdict);
  return fn;
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
    case ProbeSite::Kind::None: return "none";
  }
  return "?";
}

}  // namespace goscope
