// Fuzz target: an analysis cache record edited by someone who can also
// recompute its checksum (src/binary/cached_probe_proof.hpp). A made-up
// binary of a few functions of real x86-64 code (safe and unsafe
// instructions, calls of the first function, nops), each with a made-up
// inline tree; the honest record of it, as goscope's own searches make one
// (the placement rule on the decoded code, every call of the first
// function). The input edits the record's payload (each 3 bytes: an offset
// and a byte to xor there), the checksum is recomputed, and the record is
// parsed. Whatever parses and passes the proof must hold only addresses
// that are instruction starts of their function and safe to probe, by the
// function's own disassembly (analyzeFunction): a record that could place a
// probe inside an instruction or on an unsafe one is a crash.
#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "binary/analysis_record.hpp"
#include "binary/cached_probe_proof.hpp"
#include "binary/disasm.hpp"
#include "binary/inline_placement.hpp"

using namespace goscope;

namespace {

constexpr uint64_t kBase = 0x400000, kPage = 0x100;
constexpr int kFunctions = 6;

struct MadeUp {
  std::vector<GoFunction> fns;
  std::vector<uint8_t> code;  // [kBase, kBase + kFunctions * kPage)
  std::vector<FunctionCode> analysis;
  std::vector<std::vector<InlinedCall>> calls;
  std::vector<std::vector<uint64_t>> lineRuns;  // per function, ascending
};

// Instructions to build from: bytes and whether they are a `call` of the
// first function (the rel32 is filled in).
struct Piece {
  std::vector<uint8_t> bytes;
  bool callFirst = false;
};

const std::vector<Piece>& pieces() {
  static const std::vector<Piece> p = {
      {{0x48, 0x89, 0xc8}},                          // mov %rcx,%rax
      {{0x90}},                                      // nop (an inline mark)
      {{0xe8, 0, 0, 0, 0}, true},                    // call <first function>
      {{0x9c}},                                      // pushfq (unsafe: leaks TF)
      {{0x48, 0x8b, 0x05, 0x10, 0x20, 0x30, 0x00}},  // mov 0x302010(%rip),%rax
      {{0x0f, 0x1f, 0x44, 0x00, 0x00}},              // nopl 0(%rax,%rax,1)
      {{0x49, 0x90}},                                // xchg %rax,%r8 (unsafe: run as a nop)
      {{0x48, 0x83, 0xc0, 0x01}},                    // add $1,%rax
      {{0xf0, 0x48, 0x01, 0x03}},                    // lock add %rax,(%rbx) (refused)
      {{0x48, 0xb8, 0xe8, 1, 2, 3, 4, 5, 6, 7}},     // movabs with an e8 inside
  };
  return p;
}

const MadeUp& binary() {
  static const MadeUp m = [] {
    MadeUp b;
    b.code.assign(kFunctions * kPage, 0xcc);
    uint32_t seed = 12345;
    auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
    for (int f = 0; f < kFunctions; f++) {
      GoFunction fn;
      fn.name = "main.f" + std::to_string(f);
      fn.entry = kBase + f * kPage;
      fn.end = fn.entry + kPage;
      std::vector<uint64_t> starts;
      uint64_t at = fn.entry;
      while (at + 12 < fn.end - 8) {
        const Piece& p = pieces()[next() % pieces().size()];
        std::vector<uint8_t> bytes = p.bytes;
        if (p.callFirst) {
          const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(kBase) - static_cast<int64_t>(at + 5));
          std::memcpy(bytes.data() + 1, &rel, 4);
        }
        std::memcpy(b.code.data() + (at - kBase), bytes.data(), bytes.size());
        starts.push_back(at);
        at += bytes.size();
      }
      b.code[at - kBase] = 0xc3;  // ret
      starts.push_back(at);
      // A line table's runs: they start at instructions, some of them.
      std::vector<uint64_t> runs;
      for (size_t i = 0; i < starts.size(); i += 3) runs.push_back(starts[i]);
      b.lineRuns.push_back(std::move(runs));
      auto a = analyzeFunction(std::span<const uint8_t>(b.code.data() + (fn.entry - kBase), kPage), fn.entry);
      b.analysis.push_back(a ? *a : FunctionCode{});
      // Inlined calls over runs of instructions (one removed: no body);
      // ranges start and end at instruction starts, as pc tables do.
      std::vector<InlinedCall> calls;
      for (int k = 0; k < 4; k++) {
        InlinedCall c;
        c.callee = "main.inl" + std::to_string(k);
        const size_t i = 1 + next() % (starts.size() - 3), j = std::min(starts.size() - 1, i + 1 + next() % 4);
        c.parentPc = starts[i];
        if (k != 3) c.ranges.push_back({starts[i], starts[j]});
        calls.push_back(c);
      }
      b.calls.push_back(std::move(calls));
      b.fns.push_back(std::move(fn));
    }
    return b;
  }();
  return m;
}

const GoFunction* functionAt(uint64_t a) {
  const MadeUp& b = binary();
  if (a < kBase || a >= kBase + kFunctions * kPage) return nullptr;
  return &b.fns[(a - kBase) / kPage];
}

std::optional<std::span<const uint8_t>> bytesAt(uint64_t a, size_t n) {
  const MadeUp& b = binary();
  if (a < kBase || a + n > kBase + b.code.size()) return std::nullopt;
  return std::span<const uint8_t>(b.code.data() + (a - kBase), n);
}

// The record goscope's searches would write for this binary.
const std::string& honestRecord(std::span<const uint8_t, 16> key) {
  static const std::string r = [&] {
    const MadeUp& b = binary();
    AnalysisRecord rec;
    CallSiteProof proof;
    for (size_t f = 0; f < b.fns.size(); f++) {
      const FunctionCode& code = b.analysis[f];
      for (uint64_t off = 0; off < b.code.size() / kFunctions; off++) {
        const uint64_t a = b.fns[f].entry + off;
        if (!isInstructionBoundary(code, a) || b.code[a - kBase] != 0xe8) continue;
        int32_t rel;
        std::memcpy(&rel, b.code.data() + (a - kBase) + 1, 4);
        if (a + 5 + static_cast<uint64_t>(static_cast<int64_t>(rel)) == kBase) proof.sites.push_back(a);
      }
    }
    rec.callSites.emplace(kBase, proof);
    for (size_t f = 0; f < b.fns.size(); f++) {
      const auto bodies = bodiesOf(b.calls[f]);
      const std::span<const uint8_t> bytes(b.code.data() + (b.fns[f].entry - kBase), kPage);
      for (size_t k = 0; k < b.calls[f].size(); k++) {
        InlinedSite s;
        s.callee = b.calls[f][k].callee;
        s.caller = &b.fns[f];
        s.callFile = "made/up.go";
        s.callLine = static_cast<int>(k + 1);
        s.callIndex = static_cast<uint32_t>(k);
        placeInlinedProbe(b.analysis[f], bytes, bodies[k], b.calls[f][k].parentPc, s);
        s.callerFrameless = true;  // spDelta says 0 everywhere
        rec.inlined.push_back(std::move(s));
      }
    }
    for (int k = 0; k < 4; k++) rec.inlinedNames.push_back("main.inl" + std::to_string(k));
    rec.inlinedSearched.insert(rec.inlinedNames.begin(), rec.inlinedNames.end());
    return serializeAnalysis(rec, key);
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const uint8_t keyBytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const std::span<const uint8_t, 16> key(keyBytes, 16);
  std::string file = honestRecord(key);
  const size_t payload = file.size() - kAnalysisHeaderSize;
  for (size_t i = 0; i + 3 <= size; i += 3) {
    const size_t at = (static_cast<size_t>(data[i]) << 8 | data[i + 1]) % payload;
    file[kAnalysisHeaderSize + at] = static_cast<char>(file[kAnalysisHeaderSize + at] ^ data[i + 2]);
  }
  const uint64_t hash = XXH3_64bits(file.data() + kAnalysisHeaderSize, payload);
  std::memcpy(file.data() + 36, &hash, 8);  // a valid checksum: the edit is not "damage"

  const AnalysisChecks checks{functionAt, bytesAt};
  std::string why;
  auto r = parseAnalysis({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, key, checks, &why);
  if (!r) return 0;
  const MadeUp& b = binary();
  ProofSource src{functionAt, bytesAt,
                  [&b](const GoFunction& f) { return b.calls[(f.entry - kBase) / kPage]; },
                  [](const GoFunction&, uint64_t) { return std::optional<int32_t>(0); },
                  {},
                  {},
                  [&b](const GoFunction& f, std::span<const uint64_t> pcs) {
                    // The nearest run start at or before each pc.
                    const auto& runs = b.lineRuns[(f.entry - kBase) / kPage];
                    std::vector<uint64_t> out;
                    for (uint64_t pc : pcs) {
                      auto it = std::upper_bound(runs.begin(), runs.end(), pc);
                      out.push_back(it == runs.begin() ? f.entry : *std::prev(it));
                    }
                    return out;
                  }};
  std::vector<std::pair<uint64_t, const CallSiteProof*>> proofs;
  for (const auto& [e, p] : r->callSites) proofs.emplace_back(e, &p);
  std::vector<const InlinedSite*> sites;
  for (const auto& s : r->inlined) sites.push_back(&s);
  const bool callsProved = !disproveCallSites(src, proofs);
  const bool inlinedProved = !disproveInlinedSites(src, sites);
  // What passed is safe by the functions' own disassembly.
  auto safe = [&](uint64_t a) {
    const GoFunction* f = functionAt(a);
    return f && isSafeToProbe(b.analysis[(f->entry - kBase) / kPage], a);
  };
  if (callsProved)
    for (const auto& [e, p] : proofs)
      for (uint64_t a : p->sites)
        if (!safe(a)) __builtin_trap();
  if (inlinedProved)
    for (const InlinedSite* s : sites)
      for (uint64_t a : s->probes)
        if (!safe(a)) __builtin_trap();
  return 0;
}
