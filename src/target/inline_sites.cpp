#include "target/inline_sites.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "target/parallel_analysis.hpp"

namespace goscope {

namespace {

// The pc ranges of each call's body: its own and those of every call
// inlined into it (each call's ranges go to itself and up its parent chain),
// sorted. One pass for all of a caller's calls: a caller with hundreds of
// inlined calls costs calls x depth, not calls squared.
std::vector<std::vector<std::pair<uint64_t, uint64_t>>> bodiesOf(const std::vector<InlinedCall>& calls) {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> bodies(calls.size());
  for (size_t j = 0; j < calls.size(); j++) {
    int k = static_cast<int>(j);
    // The guard stops a parent cycle in a damaged table.
    for (size_t guard = 0; k >= 0 && k < static_cast<int>(calls.size()) && guard <= calls.size(); guard++) {
      auto& r = bodies[static_cast<size_t>(k)];
      r.insert(r.end(), calls[j].ranges.begin(), calls[j].ranges.end());
      k = calls[static_cast<size_t>(k)].parentIndex;
    }
  }
  for (auto& r : bodies) std::sort(r.begin(), r.end());
  return bodies;
}

}  // namespace

std::vector<InlinedSite> inlinedSitesIn(const GoBinary& bin, const GoFunction& caller,
                                        const std::function<bool(std::string_view)>& wanted) {
  std::vector<InlinedSite> out;
  auto calls = bin.pclntab().inlinedCalls(caller);
  // Every name is asked (no short cut once one is wanted): the search's
  // list of names is then the binary's whole inline tree.
  bool any = false;
  for (const auto& c : calls)
    if (!wanted || wanted(c.callee)) any = true;
  if (!any) return out;
  auto code = bin.analyze(caller, DecodeDepth::Whole);
  auto bytes = caller.end > caller.entry ? bin.elf().readVaddr(caller.entry, caller.end - caller.entry) : std::nullopt;
  std::optional<InlinePlacer> g;
  if (code && bytes) g.emplace(*code, *bytes);
  const auto bodies = bodiesOf(calls);
  for (size_t i = 0; i < calls.size(); i++) {
    if (wanted && !wanted(calls[i].callee)) continue;
    InlinedSite s{calls[i].callee, &caller, calls[i].callFile, calls[i].callLine, {}, {}};
    s.callIndex = static_cast<uint32_t>(i);
    if (!g) s.reason = "left out: " + (code ? std::string("the caller's code is not in the file") : code.error().message);
    else g->place(bodies[i], calls[i].parentPc, s);
    if (!s.probes.empty()) s.callerFrameless = bin.pclntab().spDelta(caller, s.probes.front()).value_or(0) == 0;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<InlinedSite> findInlinedSites(const GoBinary& bin, const std::function<bool(std::string_view)>& wanted,
                                          const std::function<bool(size_t, size_t)>& progress, InlinedNames* names) {
  // Callee names repeat (runtime.add is inlined thousands of times), and
  // `wanted` may be a costly regex (or keep state): asked once per name,
  // under one lock, whichever thread meets the name first.
  std::mutex seenMutex;
  std::unordered_map<std::string, bool> seen;
  auto once = [&](std::string_view name) {
    std::lock_guard lock(seenMutex);
    auto [it, fresh] = seen.try_emplace(std::string(name), false);
    if (fresh) it->second = wanted(name);
    return it->second;
  };
  // Each caller's bodies on every CPU (issue #14: start-up), gathered in the
  // function table's order so that the selection and its probe ids are the
  // same run after run.
  const auto& fns = bin.pclntab().functions();
  std::vector<std::vector<InlinedSite>> perCaller(fns.size());
  const bool finished =
      forEachInParallel(fns.size(), [&](size_t i) { perCaller[i] = inlinedSitesIn(bin, fns[i], once); }, progress);
  if (names) names->complete = finished;
  if (names && finished)
    for (const auto& [name, want] : seen) {
      names->all.push_back(name);
      if (want) names->searched.push_back(name);
    }
  std::vector<InlinedSite> out;
  for (auto& sites : perCaller)
    for (auto& s : sites) out.push_back(std::move(s));
  return out;
}

}  // namespace goscope
