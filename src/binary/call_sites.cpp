#include "binary/call_sites.hpp"

#include <Zydis/Zydis.h>
#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "binary/parallel_analysis.hpp"
#include "binary/uprobe_rules.hpp"
#include "binary/x86_insn.hpp"
#include "binary/zydis_decoder.hpp"

namespace goscope {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// What the sweep of one function found: a call site of an entry (site != 0)
// or a reason to refuse one.
struct Finding {
  uint64_t entry = 0;
  uint64_t site = 0;
  std::string why;
};
using Findings = std::vector<Finding>;

void refuseIn(Findings& out, uint64_t entry, std::string why) { out.push_back({entry, 0, std::move(why)}); }

// The search for a set of entries; refuse() keeps the first reason per entry.
class Search {
 public:
  Search(const GoBinary& bin, std::span<const uint64_t> entries,
         std::unordered_map<uint64_t, CallSiteProof>& out)
      : bin_(bin), out_(out) {
    for (uint64_t e : entries) {
      out_[e];
      textOffsets_[static_cast<uint32_t>(e - bin.pclntab().textStart())] = e;
      lo_ = std::min(lo_, e), hi_ = std::max(hi_, e);
    }
    loOff_ = static_cast<uint32_t>(lo_ - bin.pclntab().textStart());
    hiOff_ = static_cast<uint32_t>(hi_ - bin.pclntab().textStart());
    // One bit per byte of [lo, hi] (buf's 19 MB of text: 2.4 MB) when the
    // span is sane; the hash lookup otherwise.
    if (lo_ <= hi_ && hi_ - lo_ < (uint64_t{1} << 32)) {
      isEntry_.assign((hi_ - lo_) / 64 + 1, 0);
      for (uint64_t e : entries) isEntry_[(e - lo_) / 64] |= uint64_t{1} << ((e - lo_) % 64);
    }
  }

  // A range check first: most words are nowhere near an entry; then a bit
  // (a hash lookup per branch target was 2% of a cold start of buf '*').
  bool wanted(uint64_t addr) const {
    if (addr < lo_ || addr > hi_) return false;
    if (!isEntry_.empty()) return (isEntry_[(addr - lo_) / 64] >> ((addr - lo_) % 64)) & 1;
    return out_.count(addr) != 0;
  }

  void refuse(uint64_t entry, const std::string& why) {
    auto& p = out_[entry];
    if (!p.refused) p.refused = why;
  }

  void apply(const Findings& found) {
    for (const Finding& f : found) {
      if (f.site) out_[f.entry].sites.push_back(f.site);
      else refuse(f.entry, f.why);
    }
  }

  // Where `addr` is, in words: "main.main+0x2a" or "0x4a1b2c".
  std::string where(uint64_t addr) const {
    if (const GoFunction* f = bin_.pclntab().functionAt(addr)) return f->name + "+" + hex(addr - f->entry);
    return hex(addr);
  }

  // Every function's code, decoded from its entry (the same linear sweep as
  // disasm.cpp: Go puts no data in .text and pads with int3), on every CPU:
  // each function's findings are collected apart and applied in function
  // order afterwards, so the first reason kept per entry and the order of
  // the sites are those of one sweep in address order.
  // False when keepGoing said stop.
  bool code(const ZydisDecoder& zydis, const std::function<bool()>& keepGoing, const WholeCodeUser* user) {
    const auto& fns = bin_.pclntab().functions();
    const ElfFile::Section* text = bin_.elf().section(".text");
    // Text before function i that belongs to none starts at coveredBefore[i]
    // (0: none before it); searched raw with the function.
    std::vector<uint64_t> coveredBefore(fns.size(), 0);
    uint64_t covered = 0;  // end of the last function seen
    for (size_t i = 0; i < fns.size(); i++) {
      if (fns[i].end <= fns[i].entry) continue;
      coveredBefore[i] = covered;
      covered = std::max(covered, fns[i].end);
    }
    std::vector<Findings> found(fns.size());
    // Every thousand functions, the file's pages read so far go back to
    // the page cache (a later read faults them in again): the code, its
    // pc tables and inline trees, read once each here, are not all kept in
    // goscope's RSS (buf: ~30 MB of its file). Only the pages in use meanwhile are read twice.
    size_t releasedAt = 0;
    const AnalysisProgress progress = [&](size_t done, size_t) {
      if (done - releasedAt >= kReleaseEvery) {
        bin_.elf().releasePages(0, bin_.elf().bytes().size());
        releasedAt = done;
      }
      return !keepGoing || keepGoing();
    };
    const bool finished = forEachInParallel(
        fns.size(),
        [&](size_t i) {
          const GoFunction& fn = fns[i];
          const bool whole = user && user->wantsCode(i);
          std::optional<std::span<const uint8_t>> bytes;
          if (fn.end > fn.entry) bytes = bin_.elf().readVaddr(fn.entry, fn.end - fn.entry);
          if (!bytes) {
            if (whole) user->withCode(i, bin_.analyze(fn, DecodeDepth::Whole), std::nullopt);  // its error
            return;
          }
          if (text && coveredBefore[i] && fn.entry > coveredBefore[i]) rawText(coveredBefore[i], fn.entry, found[i]);
          if (!whole) {
            sweep(zydis, fn, *bytes, found[i]);
            return;
          }
          // One decode for both: the whole analysis, with this search's look
          // at each instruction riding along (the same instructions sweep()
          // visits: both stop at trailing int3 and at bytes that do not decode).
          const InstructionHook hook = [&](uint64_t at, std::span<const uint8_t> b, const ZydisDecodedInstruction_& in) {
            instruction(fn, at, b, in, found[i]);
          };
          auto code = analyzeFunction(*bytes, fn.entry, DecodeDepth::Whole, &hook);
          if (code && code->undecodable) {
            const uint64_t off = *code->undecodable - fn.entry;
            raw(*code->undecodable, bytes->subspan(off), found[i]);
          }
          user->withCode(i, code, bytes);
        },
        progress);
    if (!finished) return false;
    for (const Findings& f : found) apply(f);
    // Text outside every function (none in a pure-Go binary; C code of a
    // cgo binary would be there): searched raw.
    if (text && !fns.empty()) {
      Findings outside;
      if (fns.front().entry > text->addr) rawText(text->addr, fns.front().entry, outside);
      if (text->addr + text->size > covered && covered >= text->addr) rawText(covered, text->addr + text->size, outside);
      apply(outside);
    }
    return true;
  }

  void data() {
    const ElfFile& elf = bin_.elf();
    // The function table itself: .gopclntab, .data.rel.ro.gopclntab in a PIE.
    const uint64_t tab = bin_.pclntab().tableAddress();
    const ElfFile::Section* pcln = nullptr;
    for (const auto& s : elf.sections())
      if ((s.flags & SHF_ALLOC) && tab >= s.addr && tab < s.addr + s.size) pcln = &s;
    // Reached with no call at all: the ELF entry point, and a dynamic symbol
    // (an exported function that a loader or dlsym finds by name).
    if (wanted(elf.entryPoint())) refuse(elf.entryPoint(), "it is the ELF entry point");
    for (const auto& s : elf.sections()) {
      if (s.type != SHT_DYNSYM) continue;
      auto bytes = elf.sectionBytes(s);
      for (size_t i = 0; i + sizeof(Elf64_Sym) <= bytes.size(); i += sizeof(Elf64_Sym)) {
        const auto sym = load<Elf64_Sym>(bytes.data() + i);
        if (wanted(sym.st_value)) refuse(sym.st_value, "a dynamic symbol (" + s.name + ") names it: it can be called by name");
      }
    }
    const uint64_t typesStart = bin_.pclntab().typesStart().value_or(0);
    const uint64_t typesEnd = bin_.pclntab().typesStart() ? bin_.pclntab().typesEnd().value_or(0) : 0;
    for (const auto& s : elf.sections()) {
      const bool pointers = s.type == SHT_PROGBITS || s.type == SHT_INIT_ARRAY || s.type == SHT_FINI_ARRAY ||
                            s.type == SHT_PREINIT_ARRAY;
      if (!pointers || !(s.flags & SHF_ALLOC) || (s.flags & SHF_EXECINSTR)) continue;
      if (&s == pcln || s.name == ".gopclntab") continue;
      auto bytes = elf.sectionBytes(s);
      struct LetGo {  // the section's pages, once searched (peak RSS)
        const Search& search;
        std::span<const uint8_t> b;
        ~LetGo() { search.letGo(b); }
      } letGo{*this, bytes};
      for (size_t i = (4 - s.addr % 4) % 4; i + 4 <= bytes.size(); i += 4) {
        const uint64_t at = s.addr + i;
        if (at % 8 == 0 && i + 8 <= bytes.size()) {
          const uint64_t w = load<uint64_t>(bytes.data() + i);
          if (wanted(w))
            refuse(w, "its address is stored in " + s.name + " at " + hex(at) +
                          " (a func value, itab or closure: calls through it bypass the call sites)");
        }
        // Method tables are type data: inside [types, etypes) when moduledata
        // told where that is (fewer chance matches), anywhere otherwise.
        if (typesEnd && (at < typesStart || at >= typesEnd)) continue;
        const uint32_t w4 = load<uint32_t>(bytes.data() + i);
        if (w4 < loOff_ || w4 > hiOff_) continue;
        if (auto it = textOffsets_.find(w4); it != textOffsets_.end())
          refuse(it->second, "its text offset " + hex(w4) + " is stored in " + s.name + " at " + hex(at) +
                                 " (a method table entry: interface and reflect calls bypass the call sites)");
      }
    }
    for (const auto& [off, addend] : elf.relativeRelocations()) {
      if (!wanted(addend)) continue;
      if (pcln && off >= pcln->addr && off < pcln->addr + pcln->size) continue;
      refuse(addend, "a relocation stores its address at " + hex(off) +
                         " (a func value, itab or closure: calls through it bypass the call sites)");
    }
  }

  // The file's pages under `b` (a span of the mapping), searched: back to
  // the page cache, as in code().
  void letGo(std::span<const uint8_t> b) const {
    const ElfFile& elf = bin_.elf();
    const auto file = elf.bytes();
    if (b.empty() || b.data() < file.data() || b.data() + b.size() > file.data() + file.size()) return;
    elf.releasePages(static_cast<size_t>(b.data() - file.data()), b.size());
  }

 private:
  static constexpr size_t kReleaseEvery = 1024;  // functions

  void sweep(const ZydisDecoder& zydis, const GoFunction& fn, std::span<const uint8_t> code, Findings& out) const {
    const uint8_t* p = code.data();
    size_t left = code.size();
    uint64_t addr = fn.entry;
    while (left > 0) {
      if (*p == 0xcc && std::all_of(p, p + left, [](uint8_t b) { return b == 0xcc; })) return;
      ZydisDecodedInstruction in;
      if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zydis, nullptr, p, left, &in))) {
        // The rest of this function is not known instruction by instruction.
        raw(addr, std::span<const uint8_t>(p, left), out);
        return;
      }
      instruction(fn, addr, std::span<const uint8_t>(p, in.length), in, out);
      p += in.length, left -= in.length, addr += in.length;
    }
  }

  void instruction(const GoFunction& fn, uint64_t at, std::span<const uint8_t> bytes,
                   const ZydisDecodedInstruction& in, Findings& out) const {
    const uint64_t next = at + in.length;
    for (const auto& imm : in.raw.imm) {
      if (imm.size == 0) continue;
      if (imm.is_relative) {
        const uint64_t target = next + static_cast<uint64_t>(imm.value.s);
        if (!wanted(target)) continue;
        if (target == fn.entry) continue;  // a branch to its own start is not a call
        const bool callRel32 = in.mnemonic == ZYDIS_MNEMONIC_CALL && imm.size == 32;
        if (!callRel32) {
          refuseIn(out, target, "a jump to its entry at " + where(at) + " (a tail call: it bypasses the call sites)");
          continue;
        }
        auto view = x86::parseInsn(bytes);
        const UprobeVerdict v = view ? classifyForUprobe(*view) : UprobeVerdict{UprobeExec::Refused, Hazard::Undecodable};
        if (!v.safe() || v.exec != UprobeExec::Emulated) {
          refuseIn(out, target, "the call at " + where(at) + " cannot be probed cheaply (" + std::string(describe(v.hazard)) + ")");
          continue;
        }
        out.push_back({target, at, {}});
      } else {
        const uint64_t value = imm.is_signed ? static_cast<uint64_t>(imm.value.s) : imm.value.u;
        if (wanted(value)) refuseIn(out, value, "its address is an immediate at " + where(at) + " (the address is taken)");
      }
    }
    if (in.raw.disp.size != 0) {
      const bool ripRelative = (in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.modrm.mod == 0 &&
                               in.raw.modrm.rm == 5 && in.address_width == 64;
      const uint64_t target = ripRelative ? next + static_cast<uint64_t>(in.raw.disp.value)
                                          : static_cast<uint64_t>(in.raw.disp.value);
      if (wanted(target))
        refuseIn(out, target, std::string(ripRelative ? "a RIP-relative reference" : "an absolute reference") +
                           " to it at " + where(at) + " (the address is taken, e.g. for a func value)");
    }
  }

  // Bytes not known as instructions: any rel32 (with up to 4 immediate bytes
  // after it), absolute 32-bit or 64-bit word that could name an entry.
  void raw(uint64_t addr, std::span<const uint8_t> b, Findings& out) const {
    for (size_t i = 0; i + 4 <= b.size(); i++) {
      const uint64_t at = addr + i;
      const int32_t rel = load<int32_t>(b.data() + i);
      for (uint64_t k = 0; k <= 4; k++) {
        const uint64_t target = at + 4 + k + static_cast<uint64_t>(static_cast<int64_t>(rel));
        if (wanted(target)) refuseIn(out, target, "bytes at " + where(at) + " that do not decode could refer to it");
      }
      const uint64_t abs32 = load<uint32_t>(b.data() + i);
      if (wanted(abs32)) refuseIn(out, abs32, "bytes at " + where(at) + " that do not decode could refer to it");
      if (i + 8 <= b.size()) {
        const uint64_t w = load<uint64_t>(b.data() + i);
        if (wanted(w)) refuseIn(out, w, "bytes at " + where(at) + " that do not decode could refer to it");
      }
    }
  }

  void rawText(uint64_t from, uint64_t to, Findings& out) const {
    if (to <= from) return;
    if (auto b = bin_.elf().readVaddr(from, to - from)) raw(from, *b, out);
  }

  const GoBinary& bin_;
  std::unordered_map<uint64_t, CallSiteProof>& out_;
  std::unordered_map<uint32_t, uint64_t> textOffsets_;  // entry - text start -> entry
  uint64_t lo_ = UINT64_MAX, hi_ = 0;  // the lowest and highest entry asked
  std::vector<uint64_t> isEntry_;      // bit (addr - lo_): addr is an entry asked
  uint32_t loOff_ = 0, hiOff_ = 0;     // the same as text offsets
};

}  // namespace

CallSiteIndex CallSiteIndex::build(const GoBinary& bin, std::span<const uint64_t> entries,
                                   const std::function<bool()>& keepGoing, const WholeCodeUser* user) {
  const auto t0 = std::chrono::steady_clock::now();
  CallSiteIndex idx;
  if (entries.empty()) return idx;
  const ZydisDecoder& zydis = zydisDecoder();
  Search search(bin, entries, idx.byEntry_);
  if (!search.code(zydis, keepGoing, user)) {
    idx.interrupted_ = true;
    for (auto& [entry, proof] : idx.byEntry_) proof.refused = "the search for its call sites was interrupted";
    return idx;
  }
  search.data();
  for (auto& [entry, proof] : idx.byEntry_) std::sort(proof.sites.begin(), proof.sites.end());
  idx.buildMs_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return idx;
}

CallSiteIndex CallSiteIndex::fromProofs(std::unordered_map<uint64_t, CallSiteProof> proofs) {
  CallSiteIndex idx;
  idx.byEntry_ = std::move(proofs);
  return idx;
}

const CallSiteProof* CallSiteIndex::find(uint64_t entry) const {
  auto it = byEntry_.find(entry);
  return it == byEntry_.end() ? nullptr : &it->second;
}

ProbeSite placeAtCallSites(const ProbeSite& entryProbe, const CallSiteProof* proof) {
  if (entryProbe.kind != ProbeSite::Kind::SteppedEntry) return entryProbe;
  ProbeSite p = entryProbe;
  if (!proof) {
    p.callSitesRefused = "its call sites were not searched";
  } else if (proof->refused) {
    p.callSitesRefused = *proof->refused;
  } else if (proof->sites.empty()) {
    p.callSitesRefused = "no direct call of it was found";
  } else {
    p.kind = ProbeSite::Kind::CallSites;
    p.address = proof->sites.front();
    p.callSites = proof->sites;
    p.reason = "no stack check (its entry would be single-stepped): probed at its " +
               std::to_string(proof->sites.size()) +
               " call site(s), emulated `call`s; no other reference to it in code or data";
    return p;
  }
  p.reason += "; its call sites are not used: " + p.callSitesRefused;
  return p;
}

std::vector<ProbeSite> countPlacements(const GoBinary& bin, std::span<const GoFunction* const> fns) {
  std::vector<ProbeSite> out(fns.size());
  std::vector<uint64_t> stepped;
  for (size_t i = 0; i < fns.size(); i++) {
    auto code = bin.analyze(*fns[i], DecodeDepth::EntryOnly);
    if (!code) continue;
    out[i] = code->probe;
    if (out[i].kind == ProbeSite::Kind::SteppedEntry) stepped.push_back(code->entry);
  }
  if (stepped.empty()) return out;
  const CallSiteIndex index = CallSiteIndex::build(bin, stepped);
  for (size_t i = 0; i < fns.size(); i++) out[i] = placeAtCallSites(out[i], index.find(fns[i]->entry));
  return out;
}

namespace {

// What one caller's code says about the instructions after its calls.
struct CallerScan {
  std::vector<std::pair<uint64_t, uint64_t>> branchTargets;  // (target, from)
  std::vector<std::pair<uint64_t, uint64_t>> references;     // (address referred to, at)
  std::optional<uint64_t> indirectJump;                      // the first `jmp reg/mem`
};

CallerScan scanCaller(const ZydisDecoder& zydis, uint64_t entry, std::span<const uint8_t> code) {
  CallerScan out;
  size_t off = 0;
  while (off < code.size()) {
    ZydisDecodedInstruction in;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zydis, nullptr, code.data() + off, code.size() - off, &in))) break;
    const uint64_t at = entry + off, next = at + in.length;
    for (const auto& imm : in.raw.imm) {
      if (imm.size == 0) continue;
      if (imm.is_relative) out.branchTargets.push_back({next + static_cast<uint64_t>(imm.value.s), at});
      else out.references.push_back({imm.is_signed ? static_cast<uint64_t>(imm.value.s) : imm.value.u, at});
    }
    if (in.raw.disp.size != 0) {
      const bool rip = (in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5 &&
                       in.address_width == 64;
      out.references.push_back({rip ? next + static_cast<uint64_t>(in.raw.disp.value) : static_cast<uint64_t>(in.raw.disp.value), at});
    }
    if (in.mnemonic == ZYDIS_MNEMONIC_JMP && !out.indirectJump) {
      bool relative = false;
      for (const auto& imm : in.raw.imm) relative |= imm.size != 0 && imm.is_relative;
      if (!relative) out.indirectJump = at;
    }
    off += in.length;
  }
  return out;
}

}  // namespace

std::optional<std::string> callReturnRefusal(const GoBinary& bin, std::span<const uint64_t> sites) {
  return callEnds(bin, sites).refusal;
}

CallEnds callEnds(const GoBinary& bin, std::span<const uint64_t> sites) {
  const ZydisDecoder& zydis = zydisDecoder();
  size_t emulatedEnds = 0;
  // Sites are few per function; a caller with several is decoded once each
  // time (simple, and only for functions placed at call sites).
  for (uint64_t c : sites) {
    const GoFunction* caller = bin.pclntab().functionAt(c);
    const std::string at = caller ? caller->name + "+" + hex(c - caller->entry) : hex(c);
    if (!caller) return {"the call at " + at + " is in no function"};
    auto code = bin.analyze(*caller, DecodeDepth::Whole);
    if (!code) return {"the caller of the call at " + at + " does not decode"};
    auto head = bin.elf().readVaddr(c, 5);
    if (!head || (*head)[0] != 0xe8) return {"the call at " + at + " is not a plain 5-byte call"};
    const uint64_t r = c + 5;
    // Two calls back to back (`call f; call f`, no arguments to load): one
    // address would both end a call and start the next, in no fixed order.
    if (std::find(sites.begin(), sites.end(), r) != sites.end())
      return {"the instruction after the call at " + at + " is another call of it (back-to-back calls)"};
    if (r >= code->bodyEnd)
      return {"the instruction after the call at " + at + " is outside its caller's decoded body"};
    if (Hazard h = hazardAt(*code, r); h != Hazard::None)
      return {"the instruction after the call at " + at + " cannot be probed (" + std::string(describe(h)) + ")"};
    auto bytes = bin.elf().readVaddr(caller->entry, code->bodyEnd - caller->entry);
    if (!bytes) return {"the caller of the call at " + at + " cannot be read"};
    const CallerScan scan = scanCaller(zydis, caller->entry, *bytes);
    if (scan.indirectJump)
      return {"the caller of the call at " + at + " jumps through a register or memory at " + caller->name + "+" +
              hex(*scan.indirectJump - caller->entry) +
              " (a jump table): the instruction after the call could be reached without it"};
    for (const auto& [target, from] : scan.branchTargets)
      if (target == r)
        return {"the instruction after the call at " + at + " is the target of a jump at " + caller->name + "+" +
                hex(from - caller->entry) + ": it is reached without the call"};
    for (const auto& [addr, from] : scan.references)
      if (addr == r)
        return {"the address after the call at " + at + " is referred to at " + caller->name + "+" +
                hex(from - caller->entry) + ": it could be reached without the call"};
    // What the end costs: the instruction at r, from the bytes read above.
    const auto tail = bytes->subspan(r - caller->entry);
    ZydisDecodedInstruction in;
    std::optional<x86::InsnView> view;
    if (ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zydis, nullptr, tail.data(), tail.size(), &in)))
      view = x86::parseInsn(tail.first(in.length));
    const auto v = view ? std::optional(classifyForUprobe(*view)) : std::nullopt;
    if (v && v->safe() && v->exec == UprobeExec::Emulated) emulatedEnds++;
  }
  return {std::nullopt, !sites.empty() && emulatedEnds == sites.size(), emulatedEnds > 0};
}

std::vector<uint64_t> steppedEntries(std::span<const FunctionCode* const> codes) {
  std::vector<uint64_t> out;
  for (const FunctionCode* c : codes)
    if (c && c->probe.kind == ProbeSite::Kind::SteppedEntry) out.push_back(c->entry);
  return out;
}

}  // namespace goscope
