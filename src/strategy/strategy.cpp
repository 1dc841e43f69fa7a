#include "strategy/strategy.hpp"

#include "process/run_state.hpp"

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

// Why a backend cannot serve this target at all (empty: it can), and the
// kind of error that is when nothing else can serve the request either.
struct Blocker {
  std::string why;
  ErrorKind kind = ErrorKind::Usage;
  std::string hint;
  bool empty() const { return why.empty(); }
};

Blocker delveUnavailable(const TargetFacts& f) {
  if (!f.runningProcess)
    return {"Delve attaches to a running process (-p PID); -c and -b are served by BPF", ErrorKind::Usage,
            "start the program, then use -p PID"};
  if (!f.dlvInstalled)
    return {"dlv (Delve) is not installed", ErrorKind::External,
            "install it: apt-get install delve (Debian 12), scripts/toolchains.sh dlv (Delve 1.24 and 1.27, for Go "
            "1.22 to 1.27), or go install github.com/go-delve/delve/cmd/dlv@latest"};
  if (!f.hasDwarf)
    return {"the binary has no DWARF debug info (stripped): Delve cannot read its variables", ErrorKind::BadTarget,
            "the BPF path works on it: goscope count/latency/trace; Delve needs a build without -ldflags='-s -w'"};
  if (!f.separateDebugFile.empty())
    return {"the binary's DWARF is in a separate debug file (" + f.separateDebugFile +
                "), which Delve cannot use: dlv reads only the executable's own DWARF",
            ErrorKind::BadTarget,
            "the BPF path (count/latency/trace) and direct reads of package variables use the debug file; "
            "Delve needs the unstripped build"};
  if (!f.delveAcceptsGoVersion)
    return {"the target was built by " + (f.goVersion.empty() ? std::string("a Go release") : f.goVersion) +
                ", outside what the installed Delve supports" + (f.delveWindow.empty() ? "" : " (" + f.delveWindow + ")"),
            ErrorKind::BadTarget,
            (f.delveFetchHint.empty() ? std::string("install a Delve that supports it") : f.delveFetchHint) +
                "; or use the BPF path (goscope count/latency/trace), or try anyway: --dlv-arg=--check-go-version=false"};
  if (!f.delveBlockedBy.empty()) return {f.delveBlockedBy, ErrorKind::BadTarget, f.delveBlockedHint};
  if (!f.ptracePrivileges)
    return {f.ptraceRefusal.empty() ? "no ptrace privilege (CAP_SYS_PTRACE) over the target" : f.ptraceRefusal,
            ErrorKind::Permission,
            "run as root or as the target's user, or grant CAP_SYS_PTRACE"};
  return {};
}

Blocker bpfUnavailable(const TargetFacts& f) {
  if (!f.bpfPrivileges)
    return {"no BPF privileges (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)", ErrorKind::Permission,
            "run as root, or grant them: setcap cap_bpf,cap_perfmon+ep $(which goscope)"};
  return {};
}

// What only Delve can capture, for a per-hit request. `soft`: BPF can
// still serve the rest (float arguments print as <unavailable>), so when
// Delve cannot serve, BPF does, saying what is missing.
struct DelveOnly {
  std::string why;
  bool soft = false;
};

DelveOnly delveOnlyCapability(const ProbeRequest& r, const TargetFacts& f) {
  if (!f.locationsAreFunctions) return {"the location is not a function name goscope knows (file:line, a short name): Delve resolves it"};
  if (!r.capture.exprs.empty()) return {"Go expressions are evaluated by Delve"};
  if (r.capture.locals) return {"local variables are read by Delve"};
  if (r.capture.cond) return {"conditions are evaluated by Delve"};
  if (r.action == Action::Break && needsDelveLoading(r.hitLimits))
    return {"--max-elements, --max-depth and strings over 256 bytes are Delve's loading limits (a probe reads a string's "
            "first 256 bytes and a slice's first elements)"};
  if (f.floatArguments && (r.capture.args || r.capture.results))
    return {"float arguments live in XMM registers, which BPF cannot read", true};
  return {};
}

Failure cannot(const ProbeRequest& r, const std::string& why, const std::string& hint = {},
               ErrorKind kind = ErrorKind::Usage) {
  return fail(kind, std::string(actionName(r.action)) + ": " + why, hint);
}

// Delve would let a stopped target run: breakpoints and samples continue
// it (ptrace resumes a group-stopped process). read and set do not.
Blocker delveWouldResume(const ProbeRequest& r, const TargetFacts& f) {
  const bool letsItRun = r.action == Action::Break || r.action == Action::Trace || r.action == Action::Sample;
  if (!letsItRun || f.stoppedPid <= 0) return {};
  Error e = stoppedTargetRefusal(f.stoppedPid, actionName(r.action));
  return {e.message, e.kind, e.hint};
}

}  // namespace

Result<Plan> planRequest(const ProbeRequest& r, const TargetFacts& f) {
  Plan p;
  Blocker noDelveB = delveUnavailable(f);
  if (noDelveB.empty()) noDelveB = delveWouldResume(r, f);
  // --no-stop: Delve is refused like a Delve that cannot attach, so the
  // plan, its fallback and every reason take the one road without it.
  if (noDelveB.empty() && r.neverStop)
    noDelveB = {"--no-stop forbids Delve, which stops the target", ErrorKind::Usage,
                "drop --no-stop to let Delve serve it (the target stops while it does)"};
  const Blocker noBpfB = bpfUnavailable(f);
  const std::string& noDelve = noDelveB.why;
  const std::string& noBpf = noBpfB.why;
  const bool forcedDelve = r.strategy == StrategyChoice::Delve;
  const bool forcedBpf = r.strategy == StrategyChoice::Bpf;

  auto useDelve = [&](const std::string& why) -> Result<Plan> {
    if (forcedBpf) return cannot(r, "--strategy bpf does not fit: " + why, "drop --strategy, or use --strategy delve");
    if (!noDelve.empty()) return cannot(r, why + ", but " + noDelve, noDelveB.hint, noDelveB.kind);
    p.backend = Backend::Delve;
    p.reasons.push_back(why);
    return p;
  };
  auto useBpf = [&](const std::string& why) -> Result<Plan> {
    if (forcedDelve) return cannot(r, "--strategy delve does not fit: " + why, "drop --strategy, or use --strategy bpf");
    if (!noBpf.empty()) return cannot(r, why + ", but " + noBpf, noBpfB.hint, noBpfB.kind);
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
      return useDelve("writing a variable needs Delve (and --allow-write)");

    case Action::Count:
      return useBpf("counts stay in the kernel: microseconds a hit, no stop");
    case Action::Latency:
      return useBpf("goroutine-aware latency needs entry and return probes on every call");

    case Action::Sample:
      // Without a function to sample at, nothing needs the target stopped:
      // each interval reads the expressions from memory, as read does.
      if (r.locations.empty()) {
        if (forcedDelve || forcedBpf)
          return cannot(r, "without --at, sample reads from memory: --strategy " + std::string(forcedDelve ? "delve" : "bpf") +
                               " does not fit", "drop --strategy, or give --at FUNC to sample at FUNC's calls through Delve");
        if (f.readsArePlainVariables && f.ptracePrivileges) {
          p.backend = Backend::DirectRead;
          p.reasons.push_back("no --at: each interval reads every expression from the process's memory, never stopping it");
          return p;
        }
        return cannot(r,
                      "without --at, sample reads from memory, and " +
                          (!f.ptracePrivileges && !f.ptraceRefusal.empty() ? f.ptraceRefusal
                           : f.directReadRefusal.empty() ? std::string("these expressions need Delve")
                                                         : f.directReadRefusal),
                      "give --at FUNC: Delve then samples at FUNC's calls (the target stops briefly each time)");
      }
      return useDelve("periodic sampling halts the target briefly once an interval");

    case Action::Read: {
      if (forcedDelve) return useDelve("--strategy delve");
      if (f.readsArePlainVariables && f.ptracePrivileges && !forcedBpf) {
        p.backend = Backend::DirectRead;
        p.reasons.push_back("every expression is a package variable, a field of one or its len/cap, whose address and type are known: read the process's memory without stopping it");
        if (noDelve.empty()) p.fallback = Backend::Delve;
        return p;
      }
      if (forcedBpf) return cannot(r, "--strategy bpf cannot evaluate expressions", "use --strategy auto or delve");
      // Without DWARF neither path finds a variable; the debug info a
      // distribution ships apart gives the direct read what it needs
      // (docs/debug-info.md), while Delve needs the unstripped build.
      if (!f.hasDwarf)
        return cannot(r, "the binary has no DWARF debug info (stripped): goscope cannot find its variables or their types",
                      "give goscope its separate debug info: --debug-file FILE or --debug-dir DIR (package variables are "
                      "then read directly), or rebuild without -ldflags='-s -w'; the BPF path works on it as it is: "
                      "goscope count/latency/trace",
                      ErrorKind::BadTarget);
      return useDelve((f.directReadRefusal.empty() ? std::string("expressions need Go's type understanding")
                                                   : f.directReadRefusal) +
                      "; Delve reads it (the target stops for the read)");
    }

    case Action::Trace:
    case Action::Break: {
      // --filter: BPF tests it in the kernel; Delve makes it each
      // breakpoint's condition — except a prefix, which dlv's conditions
      // cannot say (no strings.HasPrefix): that one is BPF's alone.
      if (r.filter && r.filter->hasPrefix()) {
        const std::string why = "a prefix filter (=~) has no Delve condition (dlv has no strings.HasPrefix)";
        if (forcedDelve) return cannot(r, "--strategy delve cannot: " + why, "drop --strategy: BPF tests the prefix in the kernel");
        return useBpf(why + ": BPF tests it in the kernel");
      }
      if (r.filter) p.reasons.push_back("--filter: tested in the kernel on BPF, the breakpoint's condition on Delve");
      // Capability first.
      const DelveOnly only = delveOnlyCapability(r, f);
      const bool floats = only.soft;
      if (!only.why.empty() && !floats) {
        if (forcedBpf) return cannot(r, "--strategy bpf cannot: " + only.why, "drop --strategy, or use --strategy delve");
        return useDelve(only.why);
      }
      const std::string unavailable = floats ? "; float arguments print as <unavailable>" : "";
      if (floats && !forcedDelve) {
        const bool tooMany = f.matchedFunctions > kDelveMaxBreakpoints;
        if (forcedBpf || !noDelve.empty() || tooMany) {
          std::string why = forcedBpf ? std::string("--strategy bpf")
                            : tooMany ? std::to_string(f.matchedFunctions) + " functions match: too many for Delve breakpoints"
                                      : "Delve cannot serve this target: " + noDelve;
          return useBpf(why + unavailable);
        }
      }
      if (forcedDelve) {
        if (!noDelve.empty())
          return cannot(r, "--strategy delve cannot: " + noDelve,
                        (noDelveB.hint.empty() ? std::string() : noDelveB.hint + "; ") + "or drop --strategy: BPF serves it",
                        noDelveB.kind);
        p.backend = Backend::Delve;
        p.reasons.push_back("--strategy delve");
        if (r.capture.results) p.reasons.push_back("Delve stops at the entry: arguments only, no results");
        if (noBpf.empty()) p.fallback = p.overBudget = Backend::Bpf;
        return p;
      }
      // Results at every return: BPF's return probes see them; a Delve
      // breakpoint stops at the entry only. (Floats weigh more: only Delve
      // reads them, so for them the rate decides below.)
      if (r.capture.results && !forcedBpf && !floats) {
        auto pl = useBpf("results at each return are captured by BPF's return probes (a Delve breakpoint sees the entry only)");
        if (pl && noDelve.empty()) pl->fallback = Backend::Delve;
        return pl;
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
      // Both can: the rate decides, against what a hit costs on this host.
      std::optional<double> rate = f.measuredRatePerS ? f.measuredRatePerS : r.expectedRatePerS;
      const char* source = f.measuredRatePerS ? "measured by an in-kernel count" : "expected";
      const double bpfHitNs = f.costs.perHitNs(f.entryPlacement) + (r.capture.results ? f.costs.returnNs : 0);
      const std::string bpfCost = "BPF: ~" + describeNs(bpfHitNs) + " a hit here (" + placementName(f.entryPlacement) +
                                  " entry probe" + (r.capture.results ? " and a RET probe" : "") + ")";
      if (!rate) {
        p.backend = Backend::Bpf;
        p.reasons.push_back("hit rate unknown: " + bpfCost + ", Delve ~" + describeNs(f.costs.delveStopNs) +
                            " a hit (the process stops)" + unavailable);
        if (floats) p.reasons.push_back(only.why + ": --expect-rate N lets a slow function go to Delve");
        p.fallback = Backend::Delve;
        p.needsRate = true;
        if (f.costs.delveStopNs > 0) p.delveRateLimitPerS = r.maxOverheadPct * 1e7 / f.costs.delveStopNs;
        return p;
      }
      const double overheadPct = *rate * f.costs.delveStopNs / 1e7;
      const double bpfPct = *rate * bpfHitNs / 1e7;
      char buf[300];
      std::snprintf(buf, sizeof buf, "%.1f hits/s (%s) x ~%s per Delve hit = %.2f%% of the target's time, budget %.2f%%",
                    *rate, source, describeNs(f.costs.delveStopNs).c_str(), overheadPct, r.maxOverheadPct);
      if (overheadPct <= r.maxOverheadPct) {
        p.backend = Backend::Delve;
        p.reasons.push_back(std::string(buf) + ": Delve fits and gives full Go types" +
                            (floats ? " (" + only.why + ")" : std::string()));
        if (r.capture.results) p.reasons.push_back("Delve stops at the entry: arguments only, no results");
        p.fallback = p.overBudget = Backend::Bpf;
      } else {
        char bpfBuf[64];
        std::snprintf(bpfBuf, sizeof bpfBuf, " = %.2f%%", bpfPct);
        p.backend = Backend::Bpf;
        p.reasons.push_back(std::string(buf) + ": too much for Delve; " + bpfCost + bpfBuf + unavailable);
        p.fallback = Backend::Delve;
      }
      return p;
    }
  }
  return cannot(r, "unknown request");
}

std::string explainFacts(const TargetFacts& f) {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::string out = "facts: ";
  out += (f.goVersion.empty() ? std::string("Go version unknown") : f.goVersion);
  out += !f.hasDwarf                      ? ", stripped (no DWARF)"
         : f.separateDebugFile.empty() ? ", DWARF"
                                       : ", DWARF from the separate file " + f.separateDebugFile;
  out += f.dlvInstalled ? (f.delveWindow.empty() ? std::string(", dlv installed") : ", " + f.delveWindow) : ", no dlv";
  if (f.dlvInstalled && !f.delveWindow.empty()) out += std::string(" (accepts this target: ") + yes(f.delveAcceptsGoVersion) + ")";
  out += std::string(", BPF privileges: ") + yes(f.bpfPrivileges) + ", ptrace: " + yes(f.ptracePrivileges);
  if (!f.delveBlockedBy.empty()) out += " (" + f.delveBlockedBy + ")";
  if (f.stoppedPid > 0) out += ", stopped (state T)";
  if (f.matchedFunctions != 1) out += ", " + std::to_string(f.matchedFunctions) + " functions match";
  if (f.floatArguments) out += ", float arguments";
  if (!f.locationsAreFunctions) out += ", a location that is not a function";
  if (f.measuredRatePerS) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", measured rate %.1f hits/s", *f.measuredRatePerS);
    out += buf;
  }
  if (!f.delveChoice.empty()) out += "\n  delve: " + f.delveChoice;
  if (!f.delveFetchHint.empty()) out += " (" + f.delveFetchHint + ")";
  out += "\n  costs: a hit here costs ~" + describeNs(f.costs.emulatedNs) + " (emulated probe), ~" +
         describeNs(f.costs.steppedNs) + " (single-stepped), ~" + describeNs(f.costs.returnNs) + " (RET); " +
         f.costs.source + "; a Delve hit ~" + describeNs(f.costs.delveStopNs) + ", " + f.costs.delveSource;
  return out + "\n";
}

std::string explainPlan(const Plan& plan) {
  std::string out = std::string("plan: ") + backendName(plan.backend) + "\n";
  for (const auto& why : plan.reasons) out += "  because " + why + "\n";
  if (plan.fallback) out += std::string("  fallback: ") + backendName(*plan.fallback) + "\n";
  return out;
}

}  // namespace goscope
