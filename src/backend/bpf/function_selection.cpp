#include "backend/bpf/function_selection.hpp"

#include "util/progress.hpp"
#include "util/stop_signals.hpp"

namespace goscope {

Result<Selection> selectFunctions(const GoBinary& bin, const std::vector<Pattern>& patterns,
                                  const SelectionOptions& opt, const std::string& targetName) {
  Selection sel;
  std::string unsafeExample;
  const auto& all = bin.pclntab().functions();
  std::vector<bool> matched(patterns.size(), false);
  size_t seen = 0;
  for (const auto& fn : all) {
    // A Ctrl-C while a big binary is read stops here, before anything is
    // attached; a person at a terminal sees how far it got.
    if (++seen % 1024 == 0) {
      if (stopRequested()) return fail(ErrorKind::Interrupted, "interrupted while choosing probe sites; nothing was attached");
      reportProgress("choosing probe sites", seen, all.size());
    }
    bool match = false;
    for (size_t i = 0; i < patterns.size(); i++)
      if (patterns[i].matches(fn.name)) {
        match = true;
        matched[i] = true;
      }
    if (!match) continue;
    auto code = bin.analyze(fn);
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
    if (opt.plainEntry && isSafeToProbe(*code, fn.entry)) {
      at = fn.entry;
      kind = bpf::SiteKind::Entry;
    }
    auto entryOff = bin.fileOffset(at);
    if (!entryOff) continue;
    sel.points.push_back({*entryOff, id, kind});
    if (opt.returns) {
      for (uint64_t r : code->returns) {
        if (!isSafeToProbe(*code, r)) continue;
        if (auto off = bin.fileOffset(r)) sel.points.push_back({*off, id, bpf::SiteKind::Return});
      }
    }
    sel.functions.push_back({&fn, std::move(*code), id});
  }
  reportProgress("choosing probe sites", all.size(), all.size());
  if (sel.functions.empty()) {
    std::string what;
    for (const auto& p : patterns) what += (what.empty() ? "'" : ", '") + p.text() + "'";
    if (!unsafeExample.empty())
      return fail(ErrorKind::NoMatch, what + " matches only functions that cannot be probed safely (" + unsafeExample + ")");
    return fail(ErrorKind::NoMatch, "no function matches " + what + " in " + targetName,
                "goscope list -b BINARY shows every probe-able function");
  }
  if (!opt.ignoreMissing) {
    std::string missing;
    for (size_t i = 0; i < patterns.size(); i++)
      if (!matched[i]) missing += (missing.empty() ? "'" : ", '") + patterns[i].text() + "'";
    if (!missing.empty())
      return fail(ErrorKind::NoMatch, missing + " matches no function in " + targetName + " (the other patterns do)",
                  "check the spelling (goscope list shows every function), or --ignore-missing to go on without it");
  }
  return sel;
}

}  // namespace goscope
