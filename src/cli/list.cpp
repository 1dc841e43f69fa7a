// goscope list: `bpftrace -l` done right for Go. Every function from pclntab
// (so stripped binaries work), matched by glob or /regex/, with its DWARF
// signature when there is one, its RET sites and the address a probe would use;
// and every body the compiler inlined, marked with its caller and call site.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include "probe/argument_sources.hpp"
#include "binary/arg_info.hpp"
#include "cli/command.hpp"
#include "cli/strategy_options.hpp"
#include "cli/target_options.hpp"
#include "output/output.hpp"
#include "probe/function_suggestions.hpp"
#include "probe/pattern.hpp"
#include "binary/call_sites.hpp"
#include "binary/analysis_cache.hpp"
#include "binary/inline_sites.hpp"

namespace goscope::cli {

namespace {

const std::vector<OptionSpec> kSpecs = {
    kBinaryOption,
    kPidOption,
    kDebugFileOption,
    kDebugDirOption,
    {"json", 0, false, "one JSON object per line"},
    {"all", 'a', false, "include functions that cannot be probed (probe is null)"},
    {"help", 'h', false, "this help"},
};

output::Output::FunctionRow rowOf(const GoBinary& bin, const GoFunction& fn, const Result<FunctionCode>& code,
                                 RuntimeTypeGraph& graph, const CallSiteIndex& callSites) {
  output::Output::FunctionRow r;
  r.name = fn.name;
  const FunctionArguments args = argumentsOf(bin, fn, {}, graph, /*sourceOnly=*/true);
  r.signatureFrom = argumentsFromName(args.from);
  if (args.from == ArgumentsFrom::Dwarf) r.signature = bin.signature(fn);
  if (args.from == ArgumentsFrom::Interface) r.signature = args.inferred;
  if (args.traceback) r.layout = layoutText(*args.traceback);
  r.entry = fn.entry;
  r.size = fn.end - fn.entry;
  r.file = fn.file;
  r.line = fn.line;
  const FunctionCode* c = code ? &*code : nullptr;
  if (c) r.returns = c->returns;
  if (c) r.returnsReason = returnsUnknownReason(*c);
  // The same decision count makes (call_sites.hpp): a stepped entry is shown
  // at its call sites when they provably take every call.
  const ProbeSite probe = c ? placeAtCallSites(c->probe, callSites.find(c->entry)) : ProbeSite{};
  if (c && probe.kind != ProbeSite::Kind::None) r.probe = probe.address;
  r.probeKind = kindName(c ? probe.kind : ProbeSite::Kind::None);
  r.probeReason = c ? probe.reason : code.error().message;
  if (probe.kind == ProbeSite::Kind::CallSites) r.callSites = probe.callSites.size();
  if (!probe.callSitesRefused.empty()) r.callSitesReason = probe.callSitesRefused;
  return r;
}

// An inlined body: the caller and the call's file:line, the instruction(s)
// probed (probe_kind "inlined"), or why it is left out.
output::Output::FunctionRow inlinedRowOf(const InlinedSite& s) {
  output::Output::FunctionRow r;
  r.name = s.callee;
  if (!s.probes.empty()) r.entry = s.probes.front();
  r.size = 0;
  r.file = s.callFile;
  r.line = s.callLine;
  if (!s.probes.empty()) r.probe = s.probes.front();
  r.probeKind = s.probes.empty() ? "none" : "inlined";
  r.probeReason = s.reason;
  r.inlinedInto = s.caller->name;
  r.sites = s.probes.size();
  return r;
}

}  // namespace

int runList(const std::vector<std::string>& argv) {
  std::vector<OptionSpec> specs = kSpecs;
  specs.push_back({"explain", 0, false, "say on stderr what list reads (it has no plan to choose), and the facts about the target"});
  auto args = orRaise(parseArgs("list", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope list (-b BINARY | -p PID) [--json] [--all] [PATTERN...]", specs)
              << "PATTERN: a glob (only * and ? are wildcards) or /regex/; none lists everything\n";
    return 0;
  }
  std::vector<Pattern> patterns;
  for (const auto& p : args.positional()) patterns.push_back(orRaise(Pattern::parse(p)));
  Target target = openTargetOrRaise(args, "list");
  if (args.has("explain")) {
    ProbeRequest request;
    request.action = Action::List;
    if (target.process) request.target.pid = target.process->pid();
    // Nothing to choose: no plan line (direct-read is read's plan).
    explainWithoutPlan("list reads the executable's function table (pclntab; DWARF and .symtab where present) "
                       "and decodes each function's code to place probes: no probe is attached, no debugger, "
                       "the process is neither stopped nor read",
                       request, *target.binary, request.target.pid);
  }
  const GoBinary& bin = *target.binary;
  bool json = args.has("json"), all = args.has("all");

  auto wanted = [&](std::string_view name) {
    bool ok = patterns.empty();
    for (const auto& p : patterns) ok = ok || p.matches(name);
    return ok;
  };
  // Functions, and the bodies inlined into them (binary/inline_sites.hpp),
  // by name; a name's own function first, then its inlined bodies in
  // address order.
  struct Item {
    const GoFunction* fn = nullptr;
    const InlinedSite* site = nullptr;
    const std::string& name() const { return site ? site->callee.str() : fn->name; }
    uint64_t at() const { return site ? (site->probes.empty() ? site->caller->entry : site->probes.front()) : fn->entry; }
  };
  std::vector<Item> matched;
  for (const auto& fn : bin.pclntab().functions())
    if (wanted(fn.name)) matched.push_back({&fn, nullptr});
  // Both searches through the analysis cache (docs/analysis-cache.md).
  AnalysisCache cache = AnalysisCache::forBinary(bin);
  const InlinedSiteList sites = cachedInlinedSites(cache, bin, wanted);
  for (const auto& site : sites) matched.push_back({nullptr, &site});
  std::stable_sort(matched.begin(), matched.end(), [](const Item& a, const Item& b) {
    if (a.name() != b.name()) return a.name() < b.name();
    if ((a.site == nullptr) != (b.site == nullptr)) return a.site == nullptr;
    return a.at() < b.at();
  });

  // Each function's code (inlined bodies have none of their own), then the
  // call sites of the stepped entries among them, in one search.
  std::vector<std::optional<Result<FunctionCode>>> codes(matched.size());
  std::vector<const FunctionCode*> ok;
  for (size_t i = 0; i < matched.size(); i++) {
    if (!matched[i].fn) continue;
    codes[i] = bin.analyze(*matched[i].fn);
    if (*codes[i]) ok.push_back(&**codes[i]);
  }
  const CallSiteIndex callSites = cachedCallSites(cache, bin, steppedEntries(ok));
  cache.save();

  auto out = output::makeOutput(json);
  RuntimeTypeGraph graph(bin);  // a stripped method's signature (probe/argument_sources.hpp)
  size_t printed = 0;
  for (size_t i = 0; i < matched.size(); i++) {
    const Item& item = matched[i];
    if (item.site) {
      if (item.site->probes.empty() && !all) continue;
      out->function(inlinedRowOf(*item.site));
      printed++;
      continue;
    }
    const auto& code = *codes[i];
    bool probeable = code && code->probe.kind != ProbeSite::Kind::None;
    if (!probeable && !all) continue;
    out->function(rowOf(bin, *item.fn, code, graph, callSites));
    printed++;
  }
  out->flush();
  if (printed == 0) {
    std::string what = patterns.empty() ? "no probe-able functions" : "no probe-able function matches";
    for (const auto& p : patterns) what += " '" + p.text() + "'";
    raise({ErrorKind::NoMatch, what + " in " + target.describe(),
           suggestionHint(bin, patterns, "goscope list -b BINARY shows every function")});
  }
  return 0;
}

}  // namespace goscope::cli
