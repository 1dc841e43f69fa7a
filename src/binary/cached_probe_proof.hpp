// The proof every probe address read from the analysis cache passes before
// anything may attach it (docs/analysis-cache.md, "What is proved before a
// cached address is used"). A record's file passes the ownership, checksum
// and consistency checks of its parser (analysis_record.hpp), but whoever
// can write the file can also recompute its checksum: an address one byte
// into an instruction, placed in a process, corrupts or kills it. So no
// address from a record is taken on the record's word; each is re-derived
// from the binary's own bytes and tables, at a small part of the search's
// cost (a few instructions decoded per address, from a point the binary's
// tables say is an instruction start).
//
// This is the one place such proofs live: a part added to the record that
// holds an address (a prologue choice, say) adds its proof here, and
// AnalysisCache hands out nothing that was not proved.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "binary/call_sites.hpp"
#include "binary/inline_placement.hpp"
#include "binary/pclntab.hpp"

namespace goscope {

// What the proofs read of a binary: its function table, its bytes, each
// function's inline tree and pc-to-SP table. GoBinary's own for goscope;
// a made-up binary's for the fuzzer (tests/fuzz/fuzz_cached_probe_proof.cpp).
// Every member may be called from several threads at once.
struct ProofSource {
  std::function<const GoFunction*(uint64_t)> functionAt;
  std::function<std::optional<std::span<const uint8_t>>(uint64_t, size_t)> bytesAt;
  std::function<std::vector<InlinedCall>(const GoFunction&)> inlinedCalls;
  std::function<std::optional<int32_t>(const GoFunction&, uint64_t)> spDelta;
  // Runs each(i) for i in [0, n): on every CPU for goscope
  // (forEachInParallel); in order when empty.
  std::function<void(size_t n, const std::function<void(size_t)>& each)> forEach;
  // Asked between groups of addresses when set: false stops the proof, so
  // that a Ctrl-C during start-up is not held up by it.
  std::function<bool()> keepGoing;
  // For each pc (ascending, inside the function), an instruction start at
  // or before it from the binary's own tables (Pclntab::lineRunStarts), where
  // a decode toward it may begin instead of the entry; empty: the entry.
  std::function<std::vector<uint64_t>(const GoFunction&, std::span<const uint64_t>)> instructionStarts;
};

// nullopt when every address is proved; else the first that is not, and why.
//
// Call sites: each site is an instruction start of the function it lies in
// (the function decoded up to the site from its entry, or from the nearest
// instruction start before it that the binary's pc-to-line table gives:
// ProofSource::instructionStarts) and a `call rel32` of its entry (the parser
// checked the bytes; this checks that they are an instruction and not the
// middle of one).
//
// `*stopped` (when given) says keepGoing ended the proof early: then nothing
// is proved, nullopt or not.
std::optional<std::string> disproveCallSites(const ProofSource& bin,
                                             std::span<const std::pair<uint64_t, const CallSiteProof*>> proofs,
                                             bool* stopped = nullptr);

// Inlined bodies: the placement rule (inline_placement.hpp) re-checked on
// the caller's inline tree and bytes: the body is the caller's call number
// callIndex, of that callee; its one probe is the body's first instruction
// (the start of its lowest pc range, an instruction start by the pc table's
// construction), or, when that one is unsafe to probe, the first safe one
// after a straight run of unsafe ones inside the body; a body the compiler
// removed is probed only at its inline mark, a safe nop at the call's pc.
// The caller-frameless flag is the pc-to-SP table's. What is not re-checked
// (it is what costs the search its time) is that nothing else jumps into
// the body: a record that lied about it could count a call twice or not at
// all, never probe inside an instruction or an unsafe one.
std::optional<std::string> disproveInlinedSites(const ProofSource& bin, std::span<const InlinedSite* const> sites,
                                                bool* stopped = nullptr);

}  // namespace goscope
