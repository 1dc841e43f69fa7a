#include "binary/analysis_cache.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "binary/cached_probe_proof.hpp"
#include "binary/inline_sites.hpp"
#include "binary/parallel_analysis.hpp"
#include "util/cache_dir.hpp"
#include "util/unique_fd.hpp"

namespace goscope {

namespace {
constexpr uint64_t kMaxFile = 1ull << 31;  // a record of a 60,000-function binary is ~40 MB
// What the proofs of cached addresses read: this binary, on every CPU.
ProofSource proofSourceOf(const GoBinary& bin) {
  return {[&bin](uint64_t a) { return bin.pclntab().functionAt(a); },
          [&bin](uint64_t a, size_t n) { return bin.elf().readVaddr(a, n); },
          [&bin](const GoFunction& f) { return bin.pclntab().inlinedCalls(f); },
          [&bin](const GoFunction& f, uint64_t pc) { return bin.pclntab().spDelta(f, pc); },
          [](size_t n, const std::function<void(size_t)>& each) { forEachInParallel(n, each); },
          {},
          [&bin](const GoFunction& f, std::span<const uint64_t> pcs) { return bin.pclntab().lineRunStarts(f, pcs); }};
}

}  // namespace

AnalysisCache AnalysisCache::forBinary(const GoBinary& bin) {
  AnalysisCache c;
  c.bin_ = &bin;
  if (const char* v = std::getenv("GOSCOPE_ANALYSIS_CACHE"); v && std::string_view(v) == "0") return c;
  // A goscope with more privileges than its user (file capabilities,
  // setuid) would place probes in other users' processes at addresses that
  // user could have written: its cache is neither read nor written
  // (docs/security.md).
  if (::getauxval(AT_SECURE)) {
    spdlog::debug("analysis cache: not used (goscope runs with privileges its user lacks: AT_SECURE)");
    return c;
  }
  const CacheDirectory& cd = cacheDirectory();
  if (!cd.dir) {
    spdlog::debug("analysis cache: not used (no private cache directory: {})", cd.note);
    return c;
  }
  auto sub = cd.dir->sub("analysis", true);
  if (!sub) {
    spdlog::debug("analysis cache: not used ({})", sub.error().message);
    return c;
  }
  if (!cd.note.empty()) spdlog::debug("analysis cache: in {} ({})", sub->path(), cd.note);
  c.dir_ = std::make_shared<const SafeDir>(std::move(*sub));
  const auto t0 = std::chrono::steady_clock::now();
  // In slices, each let go of once hashed: the whole file would otherwise
  // stay in this process's RSS (57 MB for kubectl).
  // The streaming hash equals the one-shot one.
  const auto file = bin.elf().bytes();
  XXH3_state_t* state = XXH3_createState();
  XXH128_hash_t h{};
  if (state && XXH3_128bits_reset(state) == XXH_OK) {
    constexpr size_t kSlice = 4u << 20;
    for (size_t at = 0; at < file.size(); at += kSlice) {
      const size_t n = std::min(kSlice, file.size() - at);
      XXH3_128bits_update(state, file.data() + at, n);
      bin.elf().releasePages(at, n);
    }
    h = XXH3_128bits_digest(state);
  } else {
    h = XXH3_128bits(file.data(), file.size());
  }
  XXH3_freeState(state);
  spdlog::debug("analysis cache: {} bytes hashed in {:.1f} ms", file.size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, h);
  std::memcpy(c.key_.data(), canon.digest, 16);
  char name[64];
  std::snprintf(name, sizeof name, "%016llx%016llx.bin", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  c.name_ = name;
  c.path_ = c.dir_->pathOf(c.name_);

  auto opened = c.dir_->openOwnFile(c.name_, kMaxFile);
  if (!opened) {
    if (opened.error().kind != ErrorKind::NotFound)
      spdlog::debug("analysis cache: {} ignored (not a private regular file of this user: {})", c.path_,
                    opened.error().message);
    return c;
  }
  const UniqueFd fd = std::move(*opened);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return c;
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != bytes.size()) return c;
  AnalysisChecks checks{[&bin](uint64_t a) { return bin.pclntab().functionAt(a); },
                        [&bin](uint64_t a, size_t n) { return bin.elf().readVaddr(a, n); }};
  std::string why;
  auto parsed = parseAnalysis(bytes, c.key_, checks, &why);
  // The checks read the code at every cached call site: those pages may go.
  bin.elf().releasePages(0, file.size());
  if (auto& r = parsed) {
    c.rec_ = std::move(*r);
    c.provedBodies_.assign(c.rec_.inlined.size(), 0);
    spdlog::debug("analysis cache: {} read ({} call-site proofs, {} inlined bodies) in {:.1f} ms", c.path_,
                  c.rec_.callSites.size(), c.rec_.inlined.size(),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  } else {
    spdlog::debug("analysis cache: {} ignored: {}", c.path_, why);
  }
  return c;
}

void AnalysisCache::distrust(const std::string& why) {
  spdlog::warn("analysis cache: {} ignored: a cached probe address failed its proof against the binary ({}); "
               "searching again",
               path_, why);
  rec_ = AnalysisRecord{};
  provedEntries_.clear();
  provedBodies_.clear();
  dirty_ = true;  // whatever the search finds replaces the file
}

std::optional<std::unordered_map<uint64_t, CallSiteProof>> AnalysisCache::callSites(
    std::span<const uint64_t> entries, const std::function<bool()>& keepGoing) {
  std::unordered_map<uint64_t, CallSiteProof> out;
  std::vector<std::pair<uint64_t, const CallSiteProof*>> unproved;
  for (uint64_t e : entries) {
    auto it = rec_.callSites.find(e);
    if (it == rec_.callSites.end()) return std::nullopt;
    if (!provedEntries_.contains(e)) unproved.emplace_back(e, &it->second);
  }
  if (!unproved.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    ProofSource src = proofSourceOf(*bin_);
    src.keepGoing = keepGoing;
    bool stopped = false;
    auto why = disproveCallSites(src, unproved, &stopped);
    if (stopped) return std::nullopt;
    if (why) {
      distrust(*why);
      return std::nullopt;
    }
    for (const auto& [e, _] : unproved) provedEntries_.insert(e);
    spdlog::debug("analysis cache: the call sites of {} function(s) proved on the binary in {:.1f} ms",
                  unproved.size(),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (uint64_t e : entries) out.emplace(e, rec_.callSites.find(e)->second);
  return out;
}

bool AnalysisCache::proveInlined(const std::vector<const InlinedSite*>& sites, const std::function<bool()>& keepGoing) {
  std::vector<const InlinedSite*> unproved;
  const InlinedSite* base = rec_.inlined.data();
  for (const InlinedSite* s : sites)
    if (!provedBodies_[static_cast<size_t>(s - base)]) unproved.push_back(s);
  if (unproved.empty()) return true;
  const auto t0 = std::chrono::steady_clock::now();
  ProofSource src = proofSourceOf(*bin_);
  src.keepGoing = keepGoing;
  bool stopped = false;
  auto why = disproveInlinedSites(src, unproved, &stopped);
  if (stopped) return false;
  if (why) {
    distrust(*why);
    return false;
  }
  for (const InlinedSite* s : unproved) provedBodies_[static_cast<size_t>(s - base)] = 1;
  spdlog::debug("analysis cache: {} inlined bodies proved on the binary in {:.1f} ms", unproved.size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return true;
}

std::optional<std::vector<const InlinedSite*>> AnalysisCache::inlined(
    const std::function<bool(std::string_view)>& wanted, const std::function<bool()>& keepGoing) {
  if (rec_.inlinedNames.empty()) return std::nullopt;
  std::unordered_set<std::string_view> want;
  for (const auto& n : rec_.inlinedNames)
    if (wanted(n)) {
      if (!rec_.inlinedSearched.contains(n)) return std::nullopt;
      want.insert(n);
    }
  const bool every = want.size() == rec_.inlinedNames.size();  // '*': no lookup per body
  std::vector<const InlinedSite*> out;
  out.reserve(every ? rec_.inlined.size() : 0);
  for (const InlinedSite& s : rec_.inlined)
    if (every || want.contains(s.callee.view())) out.push_back(&s);
  if (!proveInlined(out, keepGoing)) return std::nullopt;
  return out;
}

void AnalysisCache::addCallSites(const std::unordered_map<uint64_t, CallSiteProof>& proofs) {
  if (!enabled()) return;
  for (const auto& [e, p] : proofs)
    if (rec_.callSites.emplace(e, p).second) {
      provedEntries_.insert(e);  // the search's own
      dirty_ = true;
    }
}

void AnalysisCache::addInlined(std::vector<std::string> allNames, const std::vector<std::string>& searched,
                               std::vector<InlinedSite> sites) {
  if (!enabled()) return;
  std::sort(allNames.begin(), allNames.end());
  allNames.erase(std::unique(allNames.begin(), allNames.end()), allNames.end());
  if (rec_.inlinedNames != allNames) {  // first search, or another record's names: start over
    rec_.inlinedNames = std::move(allNames);
    rec_.inlinedSearched.clear();
    rec_.inlined.clear();
    provedBodies_.clear();
  }
  // The record's bodies kept beside the search's are handed out again from
  // here on: those not proved yet are proved first (on a failure the record
  // is dropped, and the search's bodies alone are kept).
  if (std::find(provedBodies_.begin(), provedBodies_.end(), 0) != provedBodies_.end()) {
    std::vector<const InlinedSite*> all;
    all.reserve(rec_.inlined.size());
    for (const InlinedSite& s : rec_.inlined) all.push_back(&s);
    if (!proveInlined(all)) rec_.inlinedNames = allNames;  // distrust() cleared the record
  }
  std::set<std::string, std::less<>> fresh;
  for (const auto& n : searched)
    if (!rec_.inlinedSearched.contains(n)) fresh.insert(n);
  if (fresh.empty()) return;
  if (rec_.inlined.empty() && fresh.size() == searched.size()) {
    // The first search (every name in it is fresh): its bodies are all
    // kept, in its order, with no lookup per body and no copy.
    rec_.inlined = std::move(sites);
  } else {
    for (auto& s : sites)
      if (fresh.contains(s.callee.view())) rec_.inlined.push_back(std::move(s));
  }
  // A first search adds its bodies in this order already: no sort (and no
  // merge buffer of every body) then.
  const auto byCaller = [](const InlinedSite& a, const InlinedSite& b) {
    return std::pair(a.caller->entry, a.callIndex) < std::pair(b.caller->entry, b.callIndex);
  };
  if (!std::is_sorted(rec_.inlined.begin(), rec_.inlined.end(), byCaller))
    std::stable_sort(rec_.inlined.begin(), rec_.inlined.end(), byCaller);
  rec_.inlinedSearched.insert(fresh.begin(), fresh.end());
  provedBodies_.assign(rec_.inlined.size(), 1);
  dirty_ = true;
}

namespace {

// All of `bytes` at `offset` (pwrite), or false.
bool writeAllAt(int fd, std::string_view bytes, off_t offset) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += n;
  }
  return true;
}

}  // namespace

void AnalysisCache::save() const {
  if (!enabled() || !dirty_) return;
  const auto t0 = std::chrono::steady_clock::now();
  off_t at = static_cast<off_t>(kAnalysisHeaderSize);
  // The record in pieces after room for its header, the header (with the
  // payload's checksum) last: no buffer of the whole record (peak RSS).
  auto written = dir_->writeFile(name_, [&](int fd) {
    bool ok = true;
    const auto header = streamAnalysis(rec_, key_, [&](std::string_view piece) {
      ok = ok && writeAllAt(fd, piece, at);
      at += static_cast<off_t>(piece.size());
    });
    return ok && writeAllAt(fd, std::string_view(reinterpret_cast<const char*>(header.data()), header.size()), 0);
  });
  if (!written) {
    spdlog::debug("analysis cache: {}", written.error().message);
    return;
  }
  spdlog::debug("analysis cache: {} written ({} bytes) in {:.1f} ms", path_, static_cast<uint64_t>(at),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

namespace {

// A complete search's bodies, into the cache when it is on: they move into
// the record and are handed out from there, as on a warm run (no second
// copy of them: a large program has about a hundred thousand bodies, three
// strings each, and a copy shows in the peak RSS). Every name the search
// was asked is in the record then, so the lookup finds them all.
InlinedSiteList keepInlined(AnalysisCache& cache, InlinedNames names, std::vector<InlinedSite> sites,
                            const std::function<bool(std::string_view)>& wanted) {
  if (!cache.enabled()) return InlinedSiteList(std::move(sites));
  cache.addInlined(std::move(names.all), names.searched, std::move(sites));
  if (auto stored = cache.inlined(wanted)) return InlinedSiteList(std::move(*stored));
  return InlinedSiteList();  // the binary has no inlined calls at all
}

}  // namespace

CallSiteIndex cachedCallSites(AnalysisCache& cache, const GoBinary& bin, std::span<const uint64_t> entries,
                              const std::function<bool()>& keepGoing) {
  if (entries.empty()) return CallSiteIndex::build(bin, entries);
  if (auto cached = cache.callSites(entries, keepGoing)) {
    spdlog::debug("start-up: the call sites of {} function(s) from the analysis cache", entries.size());
    return CallSiteIndex::fromProofs(std::move(*cached));
  }
  CallSiteIndex index = CallSiteIndex::build(bin, entries, keepGoing);
  if (index.interrupted()) return index;
  spdlog::debug("start-up: searched the binary for the call sites of {} function(s) in {:.1f} ms", entries.size(),
                index.buildMs());
  cache.addCallSites(index.proofs());
  return index;
}

InlinedSiteList cachedInlinedSites(AnalysisCache& cache, const GoBinary& bin,
                                   const std::function<bool(std::string_view)>& wanted,
                                   const std::function<bool(size_t, size_t)>& progress, bool* interrupted,
                                   const std::function<bool()>& keepGoing) {
  if (interrupted) *interrupted = false;
  if (auto cached = cache.inlined(wanted, keepGoing)) {
    spdlog::debug("start-up: {} inlined bodies from the analysis cache", cached->size());
    return InlinedSiteList(std::move(*cached));
  }
  const auto t0 = std::chrono::steady_clock::now();
  InlinedNames names;
  auto sites = findInlinedSites(bin, wanted, progress, &names);
  if (!names.complete) {
    if (interrupted) *interrupted = true;
    return InlinedSiteList(std::move(sites));
  }
  spdlog::debug("start-up: searched {} caller(s) for inlined bodies in {:.1f} ms", bin.pclntab().functions().size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return keepInlined(cache, std::move(names), std::move(sites), wanted);
}

StartupSearches cachedStartupSearches(AnalysisCache& cache, const GoBinary& bin, std::span<const uint64_t> entries,
                                      const std::function<bool(std::string_view)>& wanted,
                                      const std::function<bool()>& keepGoing) {
  StartupSearches out;
  if (entries.empty() || cache.callSites(entries, keepGoing) || cache.inlined(wanted, keepGoing)) {
    // One of them at most searches: each on its own, as cachedCallSites and
    // cachedInlinedSites do.
    out.callSites = cachedCallSites(cache, bin, entries, keepGoing);
    if (out.callSites.interrupted()) {
      out.interrupted = true;
      return out;
    }
    bool interrupted = false;
    out.inlined = cachedInlinedSites(cache, bin, wanted, [&](size_t, size_t) { return !keepGoing || keepGoing(); },
                                     &interrupted, keepGoing);
    out.interrupted = interrupted;
    return out;
  }
  // Both search: one decode of each function for both (the call-site
  // search's sweep reads every instruction anyway; docs/disassembly.md,
  // "Start-up").
  const auto t0 = std::chrono::steady_clock::now();
  InlinedSiteSearch inlined(bin, wanted);
  const WholeCodeUser user = inlined.user();
  out.callSites = CallSiteIndex::build(bin, entries, keepGoing, &user);
  if (out.callSites.interrupted()) {
    out.interrupted = true;
    return out;
  }
  spdlog::debug("start-up: searched the binary for the call sites of {} function(s) and {} caller(s) for inlined "
                "bodies, one decode for both, in {:.1f} ms",
                entries.size(), bin.pclntab().functions().size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  cache.addCallSites(out.callSites.proofs());
  InlinedNames names;
  auto sites = inlined.take(&names);
  out.inlined = keepInlined(cache, std::move(names), std::move(sites), wanted);
  return out;
}

}  // namespace goscope
