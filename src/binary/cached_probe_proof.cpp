#include "binary/cached_probe_proof.hpp"

#include <algorithm>
#include <Zydis/Zydis.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "binary/uprobe_rules.hpp"
#include "binary/x86_insn.hpp"
#include "binary/zydis_decoder.hpp"
#include "util/hex.hpp"

namespace goscope {

namespace {

struct Insn {
  uint64_t addr = 0;
  std::span<const uint8_t> bytes;  // exactly the instruction
  Hazard hazard = Hazard::Undecodable;
};

// The bytes of the instruction that starts at `addr`, when the file has it
// and the decoder accepts it. A walk toward a site needs no more of the
// instructions it passes (start-up: no uprobe verdict for each).
std::optional<std::span<const uint8_t>> instructionBytesAt(const ProofSource& bin, uint64_t addr, uint64_t limit) {
  if (addr >= limit) return std::nullopt;
  const size_t avail = static_cast<size_t>(std::min<uint64_t>(limit - addr, 15));
  auto b = bin.bytesAt(addr, avail);
  if (!b || b->empty()) return std::nullopt;
  ZydisDecodedInstruction in;
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zydisDecoder(), nullptr, b->data(), b->size(), &in)))
    return std::nullopt;
  return b->subspan(0, in.length);
}

// The same, with what a uprobe on it would do.
std::optional<Insn> instructionAt(const ProofSource& bin, uint64_t addr, uint64_t limit) {
  auto b = instructionBytesAt(bin, addr, limit);
  if (!b) return std::nullopt;
  Insn out{addr, *b, Hazard::Undecodable};
  if (auto v = x86::parseInsn(out.bytes)) out.hazard = classifyForUprobe(*v).hazard;
  return out;
}

// Runs `each` over groups of items that share a caller, on every CPU; the
// first failure (in item order) wins, so the message is the same run after run.
template <class Group>
std::optional<std::string> firstFailure(const ProofSource& src, std::vector<Group>& groups,
                                        const std::function<std::optional<std::string>(Group&)>& each, bool* stopped) {
  std::vector<std::optional<std::string>> why(groups.size());
  std::atomic<bool> failed{false}, halted{false};
  const auto one = [&](size_t i) {
    if (failed.load(std::memory_order_relaxed) || halted.load(std::memory_order_relaxed)) return;
    if (src.keepGoing && !src.keepGoing()) {
      halted = true;
      return;
    }
    why[i] = each(groups[i]);
    if (why[i]) failed = true;
  };
  if (src.forEach) src.forEach(groups.size(), one);
  else
    for (size_t i = 0; i < groups.size(); i++) one(i);
  if (stopped) *stopped = halted.load();
  for (auto& w : why)
    if (w) return w;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> disproveCallSites(const ProofSource& bin,
                                             std::span<const std::pair<uint64_t, const CallSiteProof*>> proofs,
                                             bool* stopped) {
  if (stopped) *stopped = false;
  // Every site by the function it lies in: one decode of that function's
  // head up to its last site, whichever entries its sites call. One sorted
  // array, not a map of vectors (start-up: buf has 90,000 sites); the
  // groups come in the function table's order either way.
  std::vector<std::pair<const GoFunction*, uint64_t>> bySite;
  for (const auto& [entry, proof] : proofs)
    for (uint64_t site : proof->sites) {
      const GoFunction* f = bin.functionAt(site);
      if (!f) return "call site " + hex(site) + " of " + hex(entry) + " lies in no function";
      bySite.emplace_back(f, site);
    }
  std::sort(bySite.begin(), bySite.end(), [](const auto& a, const auto& b) {
    return std::less<const GoFunction*>{}(a.first, b.first) || (a.first == b.first && a.second < b.second);
  });
  bySite.erase(std::unique(bySite.begin(), bySite.end()), bySite.end());
  struct Group {
    const GoFunction* fn;
    std::vector<uint64_t> sites;
  };
  std::vector<Group> groups;
  for (const auto& [fn, site] : bySite) {
    if (groups.empty() || groups.back().fn != fn) groups.push_back({fn, {}});
    groups.back().sites.push_back(site);
  }
  return firstFailure<Group>(bin, groups, [&](Group& g) -> std::optional<std::string> {
    // Decoding from the entry to every site cost most of a warm start (a
    // caller decoded up to its last site): each site's decode starts at the
    // nearest instruction start the tables give, when that is past the last
    // instruction decoded.
    const std::vector<uint64_t> from =
        bin.instructionStarts ? bin.instructionStarts(*g.fn, g.sites) : std::vector<uint64_t>{};
    uint64_t at = g.fn->entry;
    for (size_t i = 0; i < g.sites.size(); i++) {
      const uint64_t site = g.sites[i];
      if (i < from.size() && from[i] > at && from[i] <= site) at = from[i];
      while (at < site) {
        auto in = instructionBytesAt(bin, at, g.fn->end);
        if (!in) return "call site " + hex(site) + ": " + g.fn->name + " does not decode at " + hex(at);
        at += in->size();
      }
      if (at != site) return "call site " + hex(site) + " is inside an instruction of " + g.fn->name;
      auto in = instructionBytesAt(bin, site, g.fn->end);
      if (!in || in->size() != 5 || (*in)[0] != 0xe8)
        return "call site " + hex(site) + " is not a call rel32 in " + g.fn->name;
    }
    return std::nullopt;
  }, stopped);
}

std::optional<std::string> disproveInlinedSites(const ProofSource& bin, std::span<const InlinedSite* const> sites,
                                                bool* stopped) {
  if (stopped) *stopped = false;
  struct Group {
    const GoFunction* caller;
    std::vector<const InlinedSite*> sites;
  };
  std::vector<Group> groups;
  for (const InlinedSite* s : sites) {
    if (s->probes.empty()) continue;  // left out: no address to prove
    if (!s->caller) return std::string("an inlined body without a caller");
    if (groups.empty() || groups.back().caller != s->caller) groups.push_back({s->caller, {}});
    groups.back().sites.push_back(s);
  }
  return firstFailure<Group>(bin, groups, [&](Group& g) -> std::optional<std::string> {
    const GoFunction& caller = *g.caller;
    const auto calls = bin.inlinedCalls(caller);
    const auto bodies = bodiesOf(calls);
    for (const InlinedSite* s : g.sites) {
      // Built only for a failure's message (start-up: 98,000 bodies in buf).
      const auto which = [&] { return std::string(s->callee.view()) + " in " + caller.name; };
      if (s->callIndex >= calls.size() || calls[s->callIndex].callee != s->callee.view())
        return "inlined body of " + which() + ": no such call in the caller's inline tree";
      if (s->probes.size() != 1) return "inlined body of " + which() + ": more than one probe";
      const uint64_t probe = s->probes.front();
      const auto& body = bodies[s->callIndex];
      if (body.empty()) {
        // The compiler removed the body: only a real inline mark at the call.
        const uint64_t mark = calls[s->callIndex].parentPc;
        auto in = instructionAt(bin, mark, caller.end);
        if (probe != mark || !in || in->hazard != Hazard::None || !instructionFlow(mark, in->bytes).isNop)
          return "inlined body of " + which() + ": probe " + hex(probe) + " is not the call's inline mark";
      } else {
        uint64_t spanEnd = 0;
        for (const auto& r : body) spanEnd = std::max(spanEnd, r.second);
        uint64_t at = body.front().first;
        for (;;) {
          if (at > probe || at >= spanEnd)
            return "inlined body of " + which() + ": probe " + hex(probe) + " is not where the placement rule puts it";
          auto in = instructionAt(bin, at, caller.end);
          if (!in) return "inlined body of " + which() + ": the caller does not decode at " + hex(at);
          if (at == probe) {
            if (in->hazard != Hazard::None)
              return "inlined body of " + which() + ": probe " + hex(probe) + " is unsafe (" +
                     std::string(describe(in->hazard)) + ")";
            break;
          }
          // Passed over only when unsafe and straight-line (the rule's own
          // condition for moving on).
          if (in->hazard == Hazard::None || !instructionFlow(at, in->bytes).straightLine)
            return "inlined body of " + which() + ": probe " + hex(probe) + " is not where the placement rule puts it";
          at += in->bytes.size();
        }
      }
      const bool frameless = bin.spDelta(caller, probe).value_or(0) == 0;
      if (frameless != s->callerFrameless)
        return "inlined body of " + which() + ": its frame flag disagrees with the pc-to-SP table";
    }
    return std::nullopt;
  }, stopped);
}

}  // namespace goscope
