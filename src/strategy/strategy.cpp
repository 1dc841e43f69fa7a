#include "strategy/strategy.hpp"

#include <cstdio>

namespace goscope {

const char* actionName(Action a) {
  switch (a) {
    case Action::List: return "list";
    case Action::Info: return "info";
    case Action::Count: return "count";
    case Action::Latency: return "latency";
    case Action::Trace: return "trace";
    case Action::Read: return "read";
    case Action::Sample: return "sample";
    case Action::Break: return "break";
    case Action::Set: return "set";
  }
  return "?";
}

const char* backendName(Backend b) {
  switch (b) {
    case Backend::Bpf: return "bpf";
    case Backend::Delve: return "delve";
    case Backend::DirectRead: return "direct-read";
  }
  return "?";
}

namespace {

// Why Delve cannot serve this target at all (empty: it can).
std::string delveUnavailable(const TargetFacts& f) {
  if (!f.dlvInstalled) return "dlv is not installed";
  if (!f.hasDwarf) return "the binary is stripped (no DWARF): Delve refuses it";
  if (!f.delveAcceptsGoVersion) return "the installed Delve does not accept " + (f.goVersion.empty() ? std::string("this Go version") : f.goVersion);
  if (!f.ptracePrivileges) return "no ptrace privilege (CAP_SYS_PTRACE)";
  return {};
}

std::string bpfUnavailable(const TargetFacts& f) {
  if (!f.bpfPrivileges) return "no BPF privileges (CAP_BPF and CAP_PERFMON, or root)";
  return {};
}

// What only Delve can capture, for a per-hit request.
std::string delveOnlyCapability(const ProbeRequest& r, const TargetFacts& f) {
  if (!r.capture.exprs.empty()) return "Go expressions are evaluated by Delve";
  if (r.capture.locals) return "local variables are read by Delve";
  if (r.capture.cond) return "conditions are evaluated by Delve";
  if (f.floatArguments && (r.capture.args || r.capture.results))
    return "float arguments live in XMM registers, which BPF cannot read";
  return {};
}

Failure cannot(const ProbeRequest& r, const std::string& why, const std::string& hint = {}) {
  return fail(ErrorKind::Usage, std::string(actionName(r.action)) + ": " + why, hint);
}

}  // namespace

Result<Plan> planRequest(const ProbeRequest& r, const TargetFacts& f) {
  Plan p;
  const std::string noDelve = delveUnavailable(f);
  const std::string noBpf = bpfUnavailable(f);
  const bool forcedDelve = r.strategy == StrategyChoice::Delve;
  const bool forcedBpf = r.strategy == StrategyChoice::Bpf;

  auto useDelve = [&](const std::string& why) -> Result<Plan> {
    if (forcedBpf) return cannot(r, "--strategy bpf cannot: " + why);
    if (!noDelve.empty()) return cannot(r, why + ", but " + noDelve);
    p.backend = Backend::Delve;
    p.reasons.push_back(why);
    return p;
  };
  auto useBpf = [&](const std::string& why) -> Result<Plan> {
    if (forcedDelve) return cannot(r, "--strategy delve cannot: " + why);
    if (!noBpf.empty()) return cannot(r, why + ", but " + noBpf, "run as root");
    p.backend = Backend::Bpf;
    p.reasons.push_back(why);
    return p;
  };

  switch (r.action) {
    case Action::List:
    case Action::Info:
      p.backend = Backend::DirectRead;
      p.reasons.push_back("reads the binary only: no probe, no pause");
      return p;

    case Action::Set:
      if (!f.hasDwarf) return cannot(r, "writing a variable needs DWARF, and the binary is stripped");
      return useDelve("writing a variable needs Delve (and --allow-write)");

    case Action::Count:
      return useBpf("counts stay in the kernel: microseconds a hit, no stop");
    case Action::Latency:
      return useBpf("goroutine-aware latency needs entry and return probes on every call");

    case Action::Sample:
      return useDelve("periodic sampling halts the target briefly once an interval");

    case Action::Read: {
      if (forcedDelve) return useDelve("--strategy delve");
      if (f.readsArePlainVariables && f.ptracePrivileges && !forcedBpf) {
        p.backend = Backend::DirectRead;
        p.reasons.push_back("every expression is a package variable whose address and type are known: read the process's memory without stopping it");
        if (noDelve.empty()) p.fallback = Backend::Delve;
        return p;
      }
      if (forcedBpf) return cannot(r, "--strategy bpf cannot evaluate expressions", "use --strategy auto or delve");
      return useDelve("expressions need Go's type understanding: Delve evaluates them (the target stops for the read)");
    }

    case Action::Trace:
    case Action::Break: {
      // Capability first.
      if (std::string only = delveOnlyCapability(r, f); !only.empty()) {
        if (forcedBpf) return cannot(r, "--strategy bpf cannot: " + only);
        auto pl = useDelve(only);
        return pl;
      }
      if (forcedDelve) {
        if (!noDelve.empty()) return cannot(r, "--strategy delve cannot: " + noDelve, "the BPF path works: drop --strategy");
        p.backend = Backend::Delve;
        p.reasons.push_back("--strategy delve");
        if (noBpf.empty()) p.fallback = Backend::Bpf;
        return p;
      }
      if (forcedBpf) {
        auto pl = useBpf("--strategy bpf");
        if (pl && noDelve.empty()) pl->fallback = Backend::Delve;
        return pl;
      }
      if (!noDelve.empty()) {
        auto pl = useBpf("Delve cannot serve this target: " + noDelve);
        return pl;
      }
      if (!noBpf.empty()) {
        p.backend = Backend::Delve;
        p.reasons.push_back("BPF is not available: " + noBpf);
        return p;
      }
      // Both can: the rate decides.
      std::optional<double> rate = f.measuredRatePerS ? f.measuredRatePerS : r.expectedRatePerS;
      if (!rate) {
        p.backend = Backend::Bpf;
        p.reasons.push_back("hit rate unknown: BPF costs microseconds a hit, Delve about a millisecond");
        p.fallback = Backend::Delve;
        return p;
      }
      double overheadPct = *rate * kDelvePerHitSeconds * 100.0;
      char buf[200];
      std::snprintf(buf, sizeof buf, "%.1f hits/s x ~1 ms per Delve hit = %.2f%% of the target's time, budget %.2f%%",
                    *rate, overheadPct, r.maxOverheadPct);
      if (overheadPct <= r.maxOverheadPct) {
        p.backend = Backend::Delve;
        p.reasons.push_back(std::string(buf) + ": Delve fits and gives full Go types");
        p.fallback = Backend::Bpf;
      } else {
        p.backend = Backend::Bpf;
        p.reasons.push_back(std::string(buf) + ": too much for Delve");
        p.fallback = Backend::Delve;
      }
      return p;
    }
  }
  return cannot(r, "unknown request");
}

std::string explainPlan(const Plan& plan) {
  std::string out = std::string("plan: ") + backendName(plan.backend) + "\n";
  for (const auto& why : plan.reasons) out += "  because " + why + "\n";
  if (plan.fallback) out += std::string("  fallback: ") + backendName(*plan.fallback) + "\n";
  return out;
}

}  // namespace goscope
