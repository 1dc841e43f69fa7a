// Call-site placement: a function whose entry a uprobe would
// single-step (~4-10 us a hit: a leaf without a stack check) is counted at
// the `call rel32` instructions that call it instead, which the kernel
// emulates (~0.35 us). That is only right when every call of the function
// goes through those instructions, so the whole binary is searched for any
// other way to reach the entry; one is enough to keep the entry probe
// (docs/disassembly.md, "Call-site placement", lists what is searched and why).
//
//   code  every function of pclntab, decoded from its entry: a `call rel32`
//         to the entry is a call site; any other branch to it (a tail-call
//         `jmp`, a `jcc`) from another function, a RIP-relative operand
//         (`lea f(%rip)`: the address taken for a funcval or method value),
//         or an absolute displacement or immediate equal to it (non-PIE
//         `mov $f`) refuses. Bytes that do not decode, and text outside every
//         function, are searched byte by byte for any 32-bit displacement or
//         64-bit word that could mean the entry.
//   data  every allocated, non-executable PROGBITS section but pclntab's
//         (.gopclntab, or .data.rel.ro.gopclntab in a PIE: its tables locate
//         functions, they do not call them): an aligned
//         8-byte word equal to the entry (a funcval `main.f·f`, a static
//         itab, a closure), an aligned 4-byte word equal to entry - text
//         start (the textOff of a method table, from which the runtime builds
//         itabs and reflect calls methods; only in the type data when
//         moduledata's types range is known), and for PIE an R_X86_64_RELATIVE
//         relocation whose addend is the entry (the file holds 0 there).
//         The ELF entry point and a dynamic symbol's value refuse too (reached
//         by the loader or by name, with no call).
// A false match only costs speed (the entry is kept), never a count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "binary/disasm.hpp"
#include "binary/go_binary.hpp"

namespace goscope {

// What the search found for one entry.
struct CallSiteProof {
  std::vector<uint64_t> sites;    // every `call rel32` to the entry, ascending
  std::optional<std::string> refused;  // the first other reference found, in words
};

// Another search that needs the whole analysis (FunctionCode) of some
// functions (the inlined bodies', inline_sites.hpp): the call-site search
// decodes every function anyway, so those it decodes once for both
// (start-up). Both are called on the worker thread that has
// function i of the table, wantsCode(i) first, then, if it said yes,
// withCode(i, its analysis, its bytes (nullopt: not in the file)).
struct WholeCodeUser {
  std::function<bool(size_t i)> wantsCode;
  std::function<void(size_t i, const Result<FunctionCode>& code, std::optional<std::span<const uint8_t>> bytes)> withCode;
};

class CallSiteIndex {
 public:
  // One pass over the binary's code and data for all `entries` at once.
  // `keepGoing` is asked now and then (Ctrl-C: the Go compiler's 14,000
  // functions take about a second); when it says no, the search stops and
  // interrupted() is true (find() then proves nothing: every entry refused).
  // `user`: another search fed by the same decode (nothing when entries is
  // empty: no function is decoded then).
  static CallSiteIndex build(const GoBinary& bin, std::span<const uint64_t> entries,
                             const std::function<bool()>& keepGoing = {}, const WholeCodeUser* user = nullptr);
  // An index of proofs found earlier (the analysis cache).
  static CallSiteIndex fromProofs(std::unordered_map<uint64_t, CallSiteProof> proofs);
  const std::unordered_map<uint64_t, CallSiteProof>& proofs() const { return byEntry_; }
  bool interrupted() const { return interrupted_; }
  // nullptr when `entry` was not asked for.
  const CallSiteProof* find(uint64_t entry) const;
  double buildMs() const { return buildMs_; }

 private:
  std::unordered_map<uint64_t, CallSiteProof> byEntry_;
  double buildMs_ = 0;
  bool interrupted_ = false;
};

// The probe-site decision for call sites, pure: `entryProbe` (chooseProbeSite's)
// is replaced by Kind::CallSites when it is a SteppedEntry and `proof` shows
// every call goes through one or more safe `call` sites; otherwise it is
// returned unchanged, with callSitesRefused saying why (a SteppedEntry only).
ProbeSite placeAtCallSites(const ProbeSite& entryProbe, const CallSiteProof* proof);

// The placement a plain count gives each of `fns`: its entry probe, or its
// call sites where proven (kind None when the function cannot be decoded).
// For cost estimates (the strategy's plan, `goscope overhead`), so that they
// price what count attaches.
std::vector<ProbeSite> countPlacements(const GoBinary& bin, std::span<const GoFunction* const> fns);

// Latency and results at call sites: each call's end is the instruction
// after it (its return address), probed as a return site. Why that cannot be
// done for every one of `sites` (the first reason, in words), or nullopt when
// it can: the call is not a plain 5-byte `e8 rel32`; the instruction after it
// is outside the caller's decoded body or not safe to probe; or it can be
// reached without the call: a branch in the caller targets it, its address
// is taken (a RIP-relative or absolute reference), or the caller jumps
// through a register or memory (a jump table, whose targets are not known).
// docs/disassembly.md, "Call-site placement", says why each matters.
std::optional<std::string> callReturnRefusal(const GoBinary& bin, std::span<const uint64_t> sites);

// The same decision, and what each call's end then costs: `emulated` when
// the kernel emulates the instruction after every one of `sites` (a loop's
// back-edge `jmp`, a `nop`): each end is then an emulated hit, not a
// single-step (docs/overhead.md, "Call sites"). `someEmulated` when at
// least one is: with `emulated` false the ends are mixed, and what a call
// costs depends on which site ran. Both false when refused.
struct CallEnds {
  std::optional<std::string> refusal;
  bool emulated = false;
  bool someEmulated = false;
};
CallEnds callEnds(const GoBinary& bin, std::span<const uint64_t> sites);

// The entries of `codes` whose probe is a SteppedEntry: what build() needs.
std::vector<uint64_t> steppedEntries(std::span<const FunctionCode* const> codes);

}  // namespace goscope
