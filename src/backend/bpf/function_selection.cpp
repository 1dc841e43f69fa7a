#include "backend/bpf/function_selection.hpp"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "probe/function_suggestions.hpp"
#include "binary/analysis_cache.hpp"
#include "binary/call_sites.hpp"
#include "binary/inline_sites.hpp"
#include "binary/parallel_analysis.hpp"
#include "util/progress.hpp"
#include "util/stop_signals.hpp"

namespace goscope {

namespace {

// Every inlined body of a matching name, as SiteKind::Inlined points: under
// the function's own probe id when it also has a probed entry (one count per
// name), else under a stand-in of its own.
void addInlinedSites(const GoBinary& bin, const InlinedSiteList& sites, Selection& sel) {
  // Names by view: each GoFunction (the table's, or a stand-in's) outlives this.
  std::unordered_map<std::string_view, uint32_t> idOf;
  idOf.reserve(sel.functions.size() + sites.size() / 4);
  for (const auto& f : sel.functions) idOf.emplace(f.fn->name, f.probeId);
  for (const auto& s : sites) {
    if (s.probes.empty()) {
      if (sel.inlinedLeftOut++ == 0)
        sel.inlinedLeftOutExample = s.callee + " inlined into " + s.caller->name + " at " + s.callFile + ":" +
                                    std::to_string(s.callLine) + ": " + s.reason;
      continue;
    }
    auto it = idOf.find(s.callee);
    if (it == idOf.end()) {
      auto standIn = std::make_unique<GoFunction>();
      standIn->name = s.callee;
      standIn->file = s.callFile;
      standIn->line = s.callLine;
      uint32_t id = static_cast<uint32_t>(sel.functions.size());
      // Most first instructions of a body are single-stepped: priced as such.
      sel.functions.push_back({standIn.get(), ProbeSite::Kind::SteppedEntry, s.probes.front(), id, 0, true});
      sel.standIns.push_back(std::move(standIn));
      it = idOf.emplace(sel.standIns.back()->name, id).first;
    }
    for (uint64_t p : s.probes)
      if (auto off = bin.fileOffset(p)) {
        sel.points.push_back({*off, it->second, s.callerFrameless ? bpf::SiteKind::InlinedFrameless : bpf::SiteKind::Inlined});
        sel.functions[it->second].inlinedSites++;
      }
  }
}

}  // namespace

Result<Selection> selectFunctions(const GoBinary& bin, const std::vector<Pattern>& patterns,
                                  const SelectionOptions& opt, const std::string& targetName) {
  Selection sel;
  // Opened (the binary's file hashed) only when a search needs it.
  std::optional<AnalysisCache> cache;
  auto analysisCache = [&]() -> AnalysisCache& {
    if (!cache) cache = AnalysisCache::forBinary(bin);
    return *cache;
  };
  std::string unsafeExample;
  const auto& all = bin.pclntab().functions();
  std::vector<bool> matched(patterns.size(), false);
  std::vector<const GoFunction*> chosen;
  for (const auto& fn : all) {
    bool match = false;
    for (size_t i = 0; i < patterns.size(); i++)
      if (patterns[i].matches(fn.name)) {
        match = true;
        matched[i] = true;
      }
    if (match) chosen.push_back(&fn);
  }
  // Only what the probes need is decoded (docs/disassembly.md, "Start-up"):
  // an entry probe needs the prologue, RETs need the whole function. On
  // every CPU; the results come back in table order.
  const DecodeDepth depth = opt.returns ? DecodeDepth::Whole : DecodeDepth::EntryOnly;
  const auto t0 = std::chrono::steady_clock::now();
  // In blocks, so that at most one block of whole FunctionCode records
  // waits beside the selection (memory: under 100 MB for 58,000
  // functions). A Ctrl-C while a big binary is read stops here, before
  // anything is attached; a person at a terminal sees how far it got.
  constexpr size_t kBlock = 8192;
  unsigned threads = 0;
  sel.functions.reserve(chosen.size());
  // Stepped entries wait for one search of the whole binary for their call
  // sites (call_sites.hpp), after every block is decoded.
  struct Deferred {
    size_t index;  // into sel.functions
    ProbeSite probe;
    std::vector<uint64_t> returns;  // with opt.returns: its safe RETs, for the fall-back to the entry
  };
  std::vector<Deferred> deferred;
  const bool wantCallSites = opt.callSites && !opt.plainEntry;
  // The callee names of inlined bodies the patterns select (and which
  // patterns matched something).
  auto wantedInlined = [&](std::string_view name) {
    bool any = false;
    for (size_t i = 0; i < patterns.size(); i++)
      if (patterns[i].matches(name)) any = matched[i] = true;
    return any;
  };
  // Found with the call sites when both are searched (one decode of each
  // function for both), else on their own below.
  std::optional<InlinedSiteList> inlinedSites;
  for (size_t from = 0; from < chosen.size(); from += kBlock) {
    const std::span<const GoFunction* const> block(chosen.data() + from, std::min(kBlock, chosen.size() - from));
    auto codes = analyzeFunctions(
        bin, block, depth,
        [&](size_t done, size_t) {
          reportProgress("choosing probe sites", from + done, chosen.size());
          return !stopRequested();
        },
        {.threadsUsed = &threads});
    if (codes.size() != block.size() || stopRequested())
      return fail(ErrorKind::Interrupted, "interrupted while choosing probe sites; nothing was attached");
    // The block's code pages, read: they go back to the page cache until a
    // search reads them again (it lets each go once read: peak RSS).
    const GoFunction& last = *block.back();
    if (auto lo = bin.fileOffset(block.front()->entry), hi = bin.fileOffset(last.entry); lo && hi && *lo <= *hi)
      bin.elf().releasePages(*lo, *hi - *lo + (last.end > last.entry ? last.end - last.entry : 0));
    for (size_t k = 0; k < block.size(); k++) {
      const GoFunction& fn = *block[k];
      auto& code = codes[k];
      if (!code || code->probe.kind == ProbeSite::Kind::None) {
        sel.skippedUnsafe++;
        if (unsafeExample.empty())
          unsafeExample = fn.name + ": " + (code ? code->probe.reason : code.error().message);
        continue;
      }
      // Returns wanted but not all known (the sweep stopped on bytes the
      // decoder rejects): probing the RETs found would report calls that never
      // complete, a silent wrong answer. Left out, with the reason.
      if (opt.returns) {
        if (auto why = returnsUnknownReason(*code)) {
          if (sel.skippedReturnsUnknown++ == 0) sel.returnsUnknownExample = fn.name + ": " + *why;
          if (unsafeExample.empty()) unsafeExample = fn.name + ": " + *why;
          continue;
        }
      }
      uint32_t id = static_cast<uint32_t>(sel.functions.size());
      uint64_t at = code->probe.address;
      bpf::SiteKind kind = code->probe.kind == ProbeSite::Kind::StackCheckBranch ? bpf::SiteKind::EntryStackCheck
                                                                                 : bpf::SiteKind::Entry;
      // A stack-growing call passes the plain entry twice (morestack comes
      // back to it): its jbe marks the pass going to morestack, and the
      // entry skips the pass that follows a mark (bpf/goscope_shared.h,
      // GS_SITE_ENTRY_MARKED), so a call counts once there too.
      std::optional<uint64_t> markOff;
      if (opt.plainEntry && isSafeToProbe(*code, fn.entry)) {
        at = fn.entry;
        kind = bpf::SiteKind::Entry;
        if (code->stackCheckBranch && *code->stackCheckBranch != fn.entry &&
            isSafeToProbe(*code, *code->stackCheckBranch))
          if ((markOff = bin.fileOffset(*code->stackCheckBranch))) kind = bpf::SiteKind::EntryMarked;
      }
      auto entryOff = bin.fileOffset(at);
      if (!entryOff) continue;
      if (wantCallSites && code->probe.kind == ProbeSite::Kind::SteppedEntry) {
        std::vector<uint64_t> rets;
        if (opt.returns)
          for (uint64_t r : code->returns)
            if (isSafeToProbe(*code, r)) rets.push_back(r);
        deferred.push_back({sel.functions.size(), code->probe, std::move(rets)});
        sel.functions.push_back({&fn, code->probe.kind, code->probe.address, id});
        continue;
      }
      if (code->probe.kind == ProbeSite::Kind::SteppedEntry && !opt.plainEntry)
        spdlog::debug("{}: entry probe, single-stepped: its call sites are not used here (stacks, break and "
                      "count --filter keep the entry: a call site's stack lacks the function's own frame)", fn.name);
      sel.points.push_back({*entryOff, id, kind});
      if (markOff) sel.points.push_back({*markOff, id, bpf::SiteKind::MorestackMark});
      if (opt.returns) {
        for (uint64_t r : code->returns) {
          if (!isSafeToProbe(*code, r)) continue;
          if (auto off = bin.fileOffset(r)) sel.points.push_back({*off, id, bpf::SiteKind::Return});
        }
      }
      sel.functions.push_back({&fn, code->probe.kind, code->probe.address, id});
    }
  }
  spdlog::debug("start-up: {} entries chosen from their {} in {:.1f} ms", chosen.size(),
                depth == DecodeDepth::Whole ? "whole code" : "prologues",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (!deferred.empty()) {
    std::vector<uint64_t> entries;
    for (const auto& d : deferred) entries.push_back(d.probe.address);
    // Found by an earlier run when the analysis cache has every entry.
    const auto keepGoing = [] { return !stopRequested(); };
    CallSiteIndex index;
    if (opt.inlined) {
      auto found = cachedStartupSearches(analysisCache(), bin, entries, wantedInlined, keepGoing);
      if (found.interrupted || stopRequested())
        return fail(ErrorKind::Interrupted, "interrupted while choosing probe sites; nothing was attached");
      index = std::move(found.callSites);
      inlinedSites = std::move(found.inlined);
    } else {
      index = cachedCallSites(analysisCache(), bin, entries, keepGoing);
    }
    if (index.interrupted() || stopRequested())
      return fail(ErrorKind::Interrupted, "interrupted while choosing probe sites; nothing was attached");
    for (const auto& d : deferred) {
      SelectedFunction& f = sel.functions[d.index];
      ProbeSite probe = placeAtCallSites(d.probe, index.find(d.probe.address));
      // Latency and results: each call ends at the instruction after it
      // (call_sites.hpp, callReturnRefusal); where one cannot, the entry and
      // its RETs are used, and -v says why.
      bool endsEmulated = false, endsMixed = false;
      if (probe.kind == ProbeSite::Kind::CallSites && opt.returns) {
        const CallEnds ends = callEnds(bin, probe.callSites);
        endsEmulated = ends.emulated;
        endsMixed = ends.someEmulated && !ends.emulated;
        if (ends.refusal) {
          probe = d.probe;
          probe.callSitesRefused = *ends.refusal;
          probe.reason += "; its call sites are not used: " + *ends.refusal;
        }
      }
      bool placed = false;
      if (probe.kind == ProbeSite::Kind::CallSites) {
        std::vector<bpf::AttachPoint> sites;
        for (uint64_t c : probe.callSites)
          if (auto off = bin.fileOffset(c)) {
            // A count needs nothing of the call but the hit: the plain entry
            // kind, as before latency and trace used the sites.
            sites.push_back({*off, f.probeId, opt.returns ? bpf::SiteKind::Call : bpf::SiteKind::Entry});
            if (!opt.returns) continue;
            if (auto after = bin.fileOffset(c + 5)) sites.push_back({*after, f.probeId, bpf::SiteKind::CallReturn});
          }
        if (sites.size() == probe.callSites.size() * (opt.returns ? 2 : 1)) {
          sel.points.insert(sel.points.end(), sites.begin(), sites.end());
          f.probeKind = ProbeSite::Kind::CallSites;
          f.probeAddress = probe.address;
          f.callSites = probe.callSites.size();
          f.callEndsEmulated = endsEmulated;
          f.callEndsMixed = endsMixed;
          placed = true;
          spdlog::debug("{}: {}{}", f.fn->name, probe.reason,
                        opt.returns ? "; each call ends at the instruction after it (its return address)" : "");
        }
      }
      if (!placed) {
        if (auto off = bin.fileOffset(d.probe.address)) sel.points.push_back({*off, f.probeId, bpf::SiteKind::Entry});
        for (uint64_t r : d.returns)
          if (auto off = bin.fileOffset(r)) sel.points.push_back({*off, f.probeId, bpf::SiteKind::Return});
        spdlog::debug("{}: {}", f.fn->name, probe.reason);
      }
    }
  }
  spdlog::debug("start-up: {} of {} functions matched, decoded ({}) on {} thread(s) in {:.1f} ms ({:.0f} ms after goscope started)",
                chosen.size(), all.size(), depth == DecodeDepth::Whole ? "whole functions, for RETs" : "prologues only",
                threads, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                secondsSinceProcessStart() * 1000);
  if (opt.inlined) {
    if (!inlinedSites)
      inlinedSites = cachedInlinedSites(analysisCache(), bin, wantedInlined, [](size_t done, size_t total) {
        reportProgress("finding inlined bodies", done, total);
        return !stopRequested();
      }, nullptr, [] { return !stopRequested(); });
    addInlinedSites(bin, *inlinedSites, sel);
    spdlog::debug("start-up: {} inlined bodies made probe points ({:.0f} ms after goscope started)", inlinedSites->size(),
                  secondsSinceProcessStart() * 1000);
    if (stopRequested()) return fail(ErrorKind::Interrupted, "interrupted while choosing probe sites; nothing was attached");
    if (!opt.inlinedRefusal.empty()) {
      const auto inlinedPoint = [](const bpf::AttachPoint& p) { return bpf::isInlinedSite(p.site); };
      const size_t refused = static_cast<size_t>(std::count_if(sel.points.begin(), sel.points.end(), inlinedPoint));
      if (refused) {
        std::erase_if(sel.points, inlinedPoint);
        for (auto& f : sel.functions) f.inlinedSites = 0;
        sel.inlinedLeftOut += refused;
        sel.inlinedLeftOutExample = opt.inlinedRefusal;
      }
    }
  }
  // What the analysis read and built is not needed while the probes run:
  // the file's pages go back to the page cache (a stack's symbols fault
  // them in again), before the record is written (its buffer is not added
  // to them at the peak), and the heap it freed back to the system (peak
  // RSS, docs/disassembly.md "Start-up").
  bin.elf().releasePages(0, bin.elf().bytes().size());
  if (cache && cache->dirty()) {
    // The heap the searches freed goes back first: the record's buffers are
    // then not added on top of it (buf: the peak RSS of a cold start).
    ::malloc_trim(0);
    // What the searches found, for the next run: written on a thread of its
    // own while the probes are configured and attached (the attach is the
    // kernel's work, in the link holder), not before them: buf's 8.9 MB
    // record took 50-66 ms of a cold start. The record points
    // into the binary's function table: the caller keeps the binary alive
    // until the Selection, which joins the thread, is gone.
    // The writer takes no stop signal (they belong to the session's thread,
    // whose blocking calls they must interrupt); it inherits this mask.
    const StopSignalsHeld held;
    sel.analysisSave = std::jthread([c = std::make_unique<AnalysisCache>(std::move(*cache))]() mutable {
      c->save();
      c.reset();
      ::malloc_trim(0);
    });
  }
  cache.reset();
  ::malloc_trim(0);
  spdlog::debug("start-up: the analysis's memory returned ({:.0f} ms after goscope started)",
                secondsSinceProcessStart() * 1000);
  if (unsafeExample.empty() && sel.inlinedLeftOut) unsafeExample = sel.inlinedLeftOutExample;
  if (sel.functions.empty()) {
    std::string what;
    for (const auto& p : patterns) what += (what.empty() ? "'" : ", '") + p.text() + "'";
    if (!unsafeExample.empty())
      return fail(ErrorKind::NoMatch, what + " matches only functions that cannot be probed safely (" + unsafeExample + ")");
    return fail(ErrorKind::NoMatch, "no function matches " + what + " in " + targetName,
                suggestionHint(bin, patterns, "goscope list -b BINARY shows every probe-able function"));
  }
  if (!opt.ignoreMissing) {
    std::string missing;
    std::vector<Pattern> unmatched;
    for (size_t i = 0; i < patterns.size(); i++)
      if (!matched[i]) {
        missing += (missing.empty() ? "'" : ", '") + patterns[i].text() + "'";
        unmatched.push_back(patterns[i]);
      }
    if (!missing.empty()) {
      const std::string offer = functionSuggestions(bin, unmatched);
      return fail(ErrorKind::NoMatch, missing + " matches no function in " + targetName + " (the other patterns do)",
                  offer.empty() ? "check the spelling (goscope list shows every function), or --ignore-missing to go on without it"
                                : offer + " (or --ignore-missing to go on without it)");
    }
  }
  return sel;
}

}  // namespace goscope
