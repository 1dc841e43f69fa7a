#include "cli/strategy_options.hpp"

#include <cstdio>
#include <sstream>

#include "process/ptrace_privileges.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

std::vector<OptionSpec> strategyOptionSpecs(bool perHit, bool budget) {
  std::vector<OptionSpec> specs = {
      {"strategy", 0, true, "auto (default), delve or bpf: which path serves the request"},
      {"explain", 0, false, "print the plan, and every reason behind it, on stderr"},
      {"no-stop", 0, false, "never stop the target: a request only Delve serves is refused with the reason"},
  };
  if (perHit || budget)
    specs.push_back({"max-overhead", 0, true,
                     "the share of the target's time the probes may take, in % (default 1: Delve only within it, BPF warns "
                     "once above it); given, it is enforced live: hot probes are sampled, dropped or moved off Delve, "
                     "and said so; 100 keeps every hit"});
  if (perHit) specs.push_back({"expect-rate", 0, true, "hits per second you expect (skips measuring the rate)"});
  return specs;
}

namespace {

double positiveNumber(const Args& args, const std::string& name, double max) {
  auto text = args.get(name);
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(*text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text->size() || !(v >= 0) || v > max)
    raise({ErrorKind::Usage, "--" + name + " wants a number from 0 to " + std::to_string(static_cast<long long>(max)) + ", not '" + *text + "'"});
  return v;
}

}  // namespace

void applyStrategyOptions(const Args& args, ProbeRequest& r) {
  if (auto s = args.get("strategy")) {
    if (*s == "auto") r.strategy = StrategyChoice::Auto;
    else if (*s == "delve") r.strategy = StrategyChoice::Delve;
    else if (*s == "bpf") r.strategy = StrategyChoice::Bpf;
    else raise({ErrorKind::Usage, "--strategy wants auto, delve or bpf, not '" + *s + "'"});
  }
  r.neverStop = args.has("no-stop");
  if (args.has("max-overhead")) {
    r.maxOverheadPct = positiveNumber(args, "max-overhead", 100);
    r.maxOverheadExplicit = true;
  }
  if (args.has("expect-rate")) r.expectedRatePerS = positiveNumber(args, "expect-rate", 1e9);
}

Plan planOrRaise(const Args& args, const ProbeRequest& r, TracedTarget& target, TargetFacts* factsOut) {
  TargetFacts facts;
  auto p = api::plan(r, target, &facts);
  if (factsOut) *factsOut = facts;
  if (args.has("explain")) {
    std::string text = p ? explainPlan(*p) : "plan: none: " + p.error().message + "\n";
    text += "  " + explainFacts(facts);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) output::noticeToStderr(line);
  }
  return orRaise(std::move(p));
}

void explainWithoutPlan(const std::string& what, const ProbeRequest& r, const GoBinary& bin, std::optional<pid_t> pid) {
  TargetFacts facts;
  (void)api::plan(r, bin, pid, &facts);  // for the facts; list and info have no path to choose
  output::toStderr("goscope: plan: none: %s\n", what.c_str());
  std::istringstream lines("  " + explainFacts(facts));
  for (std::string line; std::getline(lines, line);) output::noticeToStderr(line);
}

Target openProcessForPlanning(pid_t pid) {
  auto t = openProcessTarget(pid);
  if (!t && t.error().kind == ErrorKind::Permission) orRaise(checkPtracePrivileges(pid));
  return orRaise(std::move(t));
}

}  // namespace goscope::cli
