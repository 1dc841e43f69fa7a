// What start-up found in a binary, kept between runs (a warm
// start of `count -b BIN '*'` under 0.2 s): the call-site proofs of stepped
// entries and the placement of inlined bodies, the two searches that decode
// whole functions. Keyed by a hash of the file's whole content, so a rebuilt
// binary never meets another's results; read only from a directory and a
// file private to this user, and validated against the binary when read
// (docs/analysis-cache.md says what is checked, and what is trusted).
//
// Both parts grow: each is a map from what was asked (an entry, a callee
// name) to what the search found for it, and a search's answer for one
// entry or name does not depend on what else it was asked.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/iterator/indirect_iterator.hpp>
#include <memory>
#include <unordered_set>

#include "binary/analysis_record.hpp"
#include "binary/go_binary.hpp"
#include "util/safe_dir.hpp"

namespace goscope {

class AnalysisCache {
 public:
  // Disabled (finds nothing, stores nothing) when GOSCOPE_ANALYSIS_CACHE=0,
  // when no private cache directory could be had (util/cache_dir.hpp), and
  // in a goscope run with more privileges than its user (AT_SECURE: file
  // capabilities or setuid), whose user could write the record.
  static AnalysisCache forBinary(const GoBinary& bin);

  bool enabled() const { return dir_ != nullptr; }
  const AnalysisRecord& record() const { return rec_; }
  // Proofs for every one of `entries`, or nullopt when one is not cached.
  // Every address handed out has passed cached_probe_proof.hpp's proof; a
  // record with one that does not is dropped whole (and nullopt returned).
  // keepGoing false during the proof: nullopt, nothing proved or dropped.
  std::optional<std::unordered_map<uint64_t, CallSiteProof>> callSites(std::span<const uint64_t> entries,
                                                                       const std::function<bool()>& keepGoing = {});
  // The bodies of every callee `wanted` accepts (the record's own, valid
  // while this cache lives and nothing is added to it), or nullopt when a
  // wanted name was not searched (or the names are not known yet). Proved
  // as callSites' are.
  std::optional<std::vector<const InlinedSite*>> inlined(const std::function<bool(std::string_view)>& wanted,
                                                         const std::function<bool()>& keepGoing = {});

  void addCallSites(const std::unordered_map<uint64_t, CallSiteProof>& proofs);
  void addInlined(std::vector<std::string> allNames, const std::vector<std::string>& searched,
                  std::vector<InlinedSite> sites);
  // Writes the record when something was added (atomically: a temporary
  // file renamed over the old one). Failures are logged, never fatal.
  void save() const;
  bool dirty() const { return enabled() && dirty_; }  // save() has something to write

 private:
  // The record could not be proved: dropped, and said once.
  void distrust(const std::string& why);
  // The cached bodies at `sites` not proved yet, proved (false: distrusted,
  // or stopped by keepGoing: then nothing is dropped).
  bool proveInlined(const std::vector<const InlinedSite*>& sites, const std::function<bool()>& keepGoing = {});

  const GoBinary* bin_ = nullptr;
  std::shared_ptr<const SafeDir> dir_;  // analysis/, held open
  std::string name_, path_;             // the record's file name in it, and its path for messages
  std::array<uint8_t, 16> key_{};
  AnalysisRecord rec_;
  bool dirty_ = false;
  // What has passed the proof: call-site entries, and a flag per body of
  // rec_.inlined (a search's own results need none: they are the rule's).
  std::unordered_set<uint64_t> provedEntries_;
  std::vector<char> provedBodies_;
};

// The two searches through the cache: the cached answer when it has all that
// is asked, else the search, whose answer is added (save() writes it).
// One place decides, for every subcommand that places probes or lists them.
// interrupted: the search was stopped (keepGoing / progress said no); the
// result is then incomplete and nothing is added. keepGoing is also asked
// while a cached answer is proved (from several threads at once), so that a
// Ctrl-C during start-up ends it at once.
// Inlined bodies, in the search's order: the cache's record's own (not a
// copy: kubectl has 84,000, three strings each) or a search's, kept here.
// Valid while the cache lives and nothing is added to its inlined part.
class InlinedSiteList {
 public:
  InlinedSiteList() = default;
  explicit InlinedSiteList(std::vector<const InlinedSite*> cached) : sites_(std::move(cached)) {}
  explicit InlinedSiteList(std::vector<InlinedSite> found) : found_(std::move(found)) {
    sites_.reserve(found_.size());
    for (const auto& s : found_) sites_.push_back(&s);
  }
  InlinedSiteList(InlinedSiteList&&) = default;  // found_'s buffer, and so every pointer, moves along
  InlinedSiteList& operator=(InlinedSiteList&&) = default;
  size_t size() const { return sites_.size(); }
  bool empty() const { return sites_.empty(); }
  auto begin() const { return boost::make_indirect_iterator(sites_.cbegin()); }
  auto end() const { return boost::make_indirect_iterator(sites_.cend()); }

 private:
  std::vector<InlinedSite> found_;
  std::vector<const InlinedSite*> sites_;
};

// Both, for a selection that wants call sites and inlined bodies: when
// neither answer is cached, one decode of each function feeds both searches
// (start-up). interrupted: keepGoing said stop (then nothing is
// added, and neither answer may be used).
struct StartupSearches {
  CallSiteIndex callSites;
  InlinedSiteList inlined;
  bool interrupted = false;
};
StartupSearches cachedStartupSearches(AnalysisCache& cache, const GoBinary& bin, std::span<const uint64_t> entries,
                                      const std::function<bool(std::string_view)>& wanted,
                                      const std::function<bool()>& keepGoing = {});

CallSiteIndex cachedCallSites(AnalysisCache& cache, const GoBinary& bin, std::span<const uint64_t> entries,
                              const std::function<bool()>& keepGoing = {});
InlinedSiteList cachedInlinedSites(AnalysisCache& cache, const GoBinary& bin,
                                            const std::function<bool(std::string_view)>& wanted,
                                            const std::function<bool(size_t, size_t)>& progress = {},
                                            bool* interrupted = nullptr, const std::function<bool()>& keepGoing = {});

}  // namespace goscope
