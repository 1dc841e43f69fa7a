// goscope list: `bpftrace -l` done right for Go. Every function from pclntab
// (so stripped binaries work), matched by glob or /regex/, with its DWARF
// signature when there is one, its RET sites and the address a probe would use.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/command.hpp"
#include "cli/strategy_options.hpp"
#include "cli/target_options.hpp"
#include "output/output.hpp"
#include "probe/pattern.hpp"

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

output::Output::FunctionRow rowOf(const GoFunction& fn, const Result<FunctionCode>& code,
                                 const std::optional<std::string>& sig) {
  output::Output::FunctionRow r;
  r.name = fn.name;
  r.signature = sig;
  r.entry = fn.entry;
  r.size = fn.end - fn.entry;
  r.file = fn.file;
  r.line = fn.line;
  const FunctionCode* c = code ? &*code : nullptr;
  if (c) r.returns = c->returns;
  if (c) r.returnsReason = returnsUnknownReason(*c);
  if (c && c->probe.kind != ProbeSite::Kind::None) r.probe = c->probe.address;
  r.probeKind = kindName(c ? c->probe.kind : ProbeSite::Kind::None);
  r.probeReason = c ? c->probe.reason : code.error().message;
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
    // Nothing to choose (was: "plan: direct-read", which is read's plan).
    explainWithoutPlan("list reads the executable's function table (pclntab; DWARF and .symtab where present) "
                       "and decodes each function's code to place probes: no probe is attached, no debugger, "
                       "the process is neither stopped nor read",
                       request, *target.binary, request.target.pid);
  }
  const GoBinary& bin = *target.binary;
  bool json = args.has("json"), all = args.has("all");

  std::vector<const GoFunction*> matched;
  for (const auto& fn : bin.pclntab().functions()) {
    bool ok = patterns.empty();
    for (const auto& p : patterns) ok = ok || p.matches(fn.name);
    if (ok) matched.push_back(&fn);
  }
  std::sort(matched.begin(), matched.end(),
            [](const GoFunction* a, const GoFunction* b) { return a->name != b->name ? a->name < b->name : a->entry < b->entry; });

  auto out = output::makeOutput(json);
  size_t printed = 0;
  for (const GoFunction* fn : matched) {
    auto code = bin.analyze(*fn);
    bool probeable = code && code->probe.kind != ProbeSite::Kind::None;
    if (!probeable && !all) continue;
    out->function(rowOf(*fn, code, bin.signature(*fn)));
    printed++;
  }
  out->flush();
  if (printed == 0) {
    std::string what = patterns.empty() ? "no probe-able functions" : "no probe-able function matches";
    for (const auto& p : patterns) what += " '" + p.text() + "'";
    raise({ErrorKind::NoMatch, what + " in " + target.describe(), "goscope list -b BINARY shows every function"});
  }
  return 0;
}

}  // namespace goscope::cli
