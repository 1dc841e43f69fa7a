#include "binary/inline_sites.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "binary/parallel_analysis.hpp"

namespace goscope {


namespace {

// Which of a caller's calls `wanted` accepts (every name asked, with no short
// cut once one is wanted: the search's list of names is then the binary's
// whole inline tree); empty when none is.
std::vector<bool> wantedCalls(const std::vector<InlinedCall>& calls,
                              const std::function<bool(std::string_view)>& wanted) {
  std::vector<bool> want(calls.size(), false);
  bool any = false;
  for (size_t i = 0; i < calls.size(); i++) any |= want[i] = !wanted || wanted(calls[i].callee);
  if (!any) want.clear();
  return want;
}

// The wanted calls of one caller placed on its decoded code.
std::vector<InlinedSite> placeCalls(const GoBinary& bin, const GoFunction& caller, std::vector<InlinedCall>& calls,
                                    const std::vector<bool>& want, const Result<FunctionCode>& code,
                                    std::optional<std::span<const uint8_t>> bytes) {
  std::vector<InlinedSite> out;
  out.reserve(static_cast<size_t>(std::count(want.begin(), want.end(), true)));  // no doubling: kept until take()
  std::optional<InlinePlacer> g;
  if (code && bytes) g.emplace(*code, *bytes);
  const auto bodies = bodiesOf(calls);
  for (size_t i = 0; i < calls.size(); i++) {
    if (!want[i]) continue;
    InlinedSite s{std::move(calls[i].callee), &caller, std::move(calls[i].callFile), calls[i].callLine, {}, {}};
    s.callIndex = static_cast<uint32_t>(i);
    if (!g) s.reason = "left out: " + (code ? std::string("the caller's code is not in the file") : code.error().message);
    else g->place(bodies[i], calls[i].parentPc, s);
    if (!s.probes.empty()) s.callerFrameless = bin.pclntab().spDelta(caller, s.probes.front()).value_or(0) == 0;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<InlinedSite> inlinedSitesIn(const GoBinary& bin, const GoFunction& caller,
                                        const std::function<bool(std::string_view)>& wanted) {
  auto calls = bin.pclntab().inlinedCalls(caller);
  const auto want = wantedCalls(calls, wanted);
  if (want.empty()) return {};
  auto code = bin.analyze(caller, DecodeDepth::Whole);
  auto bytes = caller.end > caller.entry ? bin.elf().readVaddr(caller.entry, caller.end - caller.entry) : std::nullopt;
  return placeCalls(bin, caller, calls, want, code, bytes);
}

InlinedSiteSearch::InlinedSiteSearch(const GoBinary& bin, std::function<bool(std::string_view)> wanted)
    : bin_(bin), wanted_(std::move(wanted)), pending_(bin.pclntab().functions().size()),
      perCaller_(bin.pclntab().functions().size()), seen_(bin.pclntab().functions().size()) {}

bool InlinedSiteSearch::wanted(std::string_view name) {
  // Callee names repeat (runtime.add is inlined thousands of times), and
  // `wanted` may be a costly regex (or keep state): asked once per name,
  // under one lock, whichever thread meets the name first.
  std::lock_guard lock(namesMutex_);
  auto it = names_.find(name);
  if (it == names_.end()) it = names_.emplace(std::string(name), !wanted_ || wanted_(name)).first;
  return it->second;
}

bool InlinedSiteSearch::wantsCode(size_t i) {
  seen_[i] = true;
  const GoFunction& fn = bin_.pclntab().functions()[i];
  auto calls = bin_.pclntab().inlinedCalls(fn);
  auto want = wantedCalls(calls, [this](std::string_view n) { return wanted(n); });
  if (want.empty()) return false;
  pending_[i] = std::make_unique<Pending>(Pending{std::move(calls), std::move(want)});
  return true;
}

void InlinedSiteSearch::withCode(size_t i, const Result<FunctionCode>& code, std::optional<std::span<const uint8_t>> bytes) {
  const std::unique_ptr<Pending> p = std::move(pending_[i]);
  if (!p) return;  // wantsCode(i) said no
  perCaller_[i] = placeCalls(bin_, bin_.pclntab().functions()[i], p->calls, p->want, code, bytes);
}

WholeCodeUser InlinedSiteSearch::user() {
  return {[this](size_t i) { return wantsCode(i); },
          [this](size_t i, const Result<FunctionCode>& code, std::optional<std::span<const uint8_t>> bytes) {
            withCode(i, code, bytes);
          }};
}

void InlinedSiteSearch::searchAlone(size_t i) {
  if (!wantsCode(i)) return;
  const GoFunction& fn = bin_.pclntab().functions()[i];
  auto bytes = fn.end > fn.entry ? bin_.elf().readVaddr(fn.entry, fn.end - fn.entry) : std::nullopt;
  withCode(i, bin_.analyze(fn, DecodeDepth::Whole), bytes);
}

std::vector<InlinedSite> InlinedSiteSearch::take(InlinedNames* names) {
  const bool complete = std::all_of(seen_.begin(), seen_.end(), [](bool b) { return b; });
  if (names) names->complete = complete;
  if (names && complete)
    for (const auto& [name, want] : names_) {
      names->all.push_back(name);
      if (want) names->searched.push_back(name);
    }
  // In the function table's order, whatever the threads did: the selection
  // and its probe ids are the same run after run.
  std::vector<InlinedSite> out;
  size_t total = 0;
  for (const auto& sites : perCaller_) total += sites.size();
  out.reserve(total);  // one buffer, not a doubling one (buf: 97,891 bodies)
  for (auto& sites : perCaller_) {
    for (auto& s : sites) out.push_back(std::move(s));
    std::vector<InlinedSite>().swap(sites);  // each caller's husks go as soon as they are moved
  }
  return out;
}

std::vector<InlinedSite> findInlinedSites(const GoBinary& bin, const std::function<bool(std::string_view)>& wanted,
                                          const std::function<bool(size_t, size_t)>& progress, InlinedNames* names) {
  // Each caller's bodies on every CPU (start-up).
  InlinedSiteSearch search(bin, wanted);
  forEachInParallel(bin.pclntab().functions().size(), [&](size_t i) { search.searchAlone(i); }, progress);
  return search.take(names);
}

}  // namespace goscope
