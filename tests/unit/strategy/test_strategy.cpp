// The strategy is a pure function: these tests walk its whole capability
// table (every combination of target facts, action, forced strategy and
// capture) and check the invariants, then pin the rate rule.
#include <doctest/doctest.h>

#include "strategy/strategy.hpp"

using namespace goscope;

namespace {

bool delveUsable(const TargetFacts& f) {
  return f.hasDwarf && f.separateDebugFile.empty() && f.dlvInstalled && f.delveAcceptsGoVersion && f.ptracePrivileges && f.runningProcess &&
         f.delveBlockedBy.empty();
}

const Action kActions[] = {Action::List, Action::Info, Action::Count, Action::Latency, Action::Trace,
                           Action::Read, Action::Sample, Action::Break, Action::Set};

// One row of the capability table: each of the 8 bits of `bits` sets one fact.
TargetFacts factsOf(int bits) {
  TargetFacts f;
  f.hasDwarf = bits & 1;
  f.delveAcceptsGoVersion = bits & 2;
  f.dlvInstalled = bits & 4;
  f.bpfPrivileges = bits & 8;
  f.ptracePrivileges = bits & 16;
  f.floatArguments = bits & 32;
  f.readsArePlainVariables = bits & 64;
  f.runningProcess = bits & 128;
  return f;
}

}  // namespace

TEST_CASE("strategy: invariants over the whole capability table") {
  size_t plans = 0, refusals = 0;
  for (int bits = 0; bits < (1 << 8); bits++) {
    const TargetFacts f = factsOf(bits);
    for (Action a : kActions)
      for (StrategyChoice s : {StrategyChoice::Auto, StrategyChoice::Delve, StrategyChoice::Bpf})
        for (int cap = 0; cap < 8; cap++) {
          ProbeRequest r;
          r.action = a;
          r.strategy = s;
          if (a == Action::Sample) r.locations = {"main.f"};  // sample at a function (without: below)
          r.capture.args = cap & 1;
          if (cap & 2) r.capture.exprs = {"main.x"};
          r.capture.results = cap & 4;
          CAPTURE(bits);
          const std::string action = actionName(a);
          CAPTURE(action);
          CAPTURE(static_cast<int>(s));
          CAPTURE(cap);
          auto p = planRequest(r, f);
          if (!p) {
            refusals++;
            // Usage for a forced path that cannot; otherwise what blocks it.
            const ErrorKind k = p.error().kind;
            CHECK((k == ErrorKind::Usage || k == ErrorKind::Permission || k == ErrorKind::BadTarget ||
                   k == ErrorKind::External));
            CHECK(!p.error().message.empty());
            continue;
          }
          plans++;
          CHECK(!p->reasons.empty());
          // A plan never uses a backend that cannot run here.
          if (p->backend == Backend::Delve) CHECK(delveUsable(f));
          if (p->backend == Backend::Bpf) CHECK(f.bpfPrivileges);
          if (p->fallback == Backend::Delve) CHECK(delveUsable(f));
          if (p->fallback == Backend::Bpf) CHECK(f.bpfPrivileges);
          // Only a Delve trace or break moves over its budget, to BPF, which
          // must be able to serve it: nothing Delve alone can do asked.
          if (p->overBudget) {
            CHECK(p->overBudget == Backend::Bpf);
            CHECK(p->backend == Backend::Delve);
            CHECK((a == Action::Trace || a == Action::Break));
            CHECK(f.bpfPrivileges);
            CHECK(!(cap & 2));
          }
          // A forced strategy is honoured or refused, never silently changed
          // (list and info read the file and need neither).
          if (a != Action::List && a != Action::Info) {
            if (s == StrategyChoice::Delve) CHECK(p->backend == Backend::Delve);
            if (s == StrategyChoice::Bpf) CHECK(p->backend == Backend::Bpf);
          }
          // Capabilities.
          if (a == Action::Count || a == Action::Latency) CHECK(p->backend == Backend::Bpf);
          if (a == Action::Set || a == Action::Sample) CHECK(p->backend == Backend::Delve);
          if ((a == Action::Trace || a == Action::Break) && (cap & 2)) CHECK(p->backend == Backend::Delve);
          // Floats are weighed like the rest: with the rate unknown (as here)
          // BPF serves them as <unavailable> and asks for the rate.
          if ((a == Action::Trace || a == Action::Break) && (cap & 1) && !(cap & 2) && f.floatArguments &&
              s == StrategyChoice::Auto && f.bpfPrivileges) {
            CHECK(p->backend == Backend::Bpf);
            if (delveUsable(f)) CHECK(p->needsRate);
          }
          // Results at return: only BPF's return probes see them, unless
          // something only Delve can do decides first, or Delve is forced.
          if ((a == Action::Trace || a == Action::Break) && (cap & 4) && !(cap & 2) && s == StrategyChoice::Auto &&
              f.bpfPrivileges)
            CHECK(p->backend == Backend::Bpf);
          if (a == Action::Read && p->backend == Backend::DirectRead) CHECK(f.readsArePlainVariables);
          if (a == Action::Read) CHECK(p->backend != Backend::Bpf);
        }
  }
  CHECK(plans > 1000);
  CHECK(refusals > 100);
}

TEST_CASE("strategy: stripped binaries go to BPF — writes to Delve, and only with DWARF") {
  TargetFacts stripped;
  stripped.hasDwarf = false;
  ProbeRequest trace;
  trace.action = Action::Trace;
  trace.capture.args = true;
  auto p = planRequest(trace, stripped);
  REQUIRE(p);
  CHECK(p->backend == Backend::Bpf);
  CHECK(explainPlan(*p).find("stripped") != std::string::npos);

  ProbeRequest set;
  set.action = Action::Set;
  CHECK_FALSE(planRequest(set, stripped));
  TargetFacts full;
  full.hasDwarf = true;
  auto ps = planRequest(set, full);
  REQUIRE(ps);
  CHECK(ps->backend == Backend::Delve);
}

TEST_CASE("strategy: DWARF only in a separate debug file serves BPF and direct reads, never Delve") {
  TargetFacts f;
  f.hasDwarf = true;
  f.separateDebugFile = "/srv/app.debug";
  const std::string why = "the binary's DWARF is in a separate debug file (/srv/app.debug), which Delve cannot use";
  ProbeRequest read;
  read.action = Action::Read;
  f.readsArePlainVariables = true;
  auto pr = planRequest(read, f);
  REQUIRE(pr);
  CHECK(pr->backend == Backend::DirectRead);
  CHECK_FALSE(pr->fallback.has_value());  // Delve could not take over
  read.strategy = StrategyChoice::Delve;
  auto forced = planRequest(read, f);
  REQUIRE_FALSE(forced);
  CHECK(forced.error().kind == ErrorKind::BadTarget);
  CHECK(forced.error().message.find(why) != std::string::npos);

  ProbeRequest brk;  // both could serve a break: BPF, saying why not Delve
  brk.action = Action::Break;
  brk.capture.args = true;
  f.measuredRatePerS = 1;  // slow enough that Delve would be chosen if it could
  auto pb = planRequest(brk, f);
  REQUIRE(pb);
  CHECK(pb->backend == Backend::Bpf);
  CHECK(explainPlan(*pb).find("Delve cannot serve this target: " + why) != std::string::npos);
  CHECK(explainFacts(f).find("DWARF from the separate file /srv/app.debug") != std::string::npos);

  ProbeRequest sample;
  sample.action = Action::Sample;
  sample.locations = {"main.f"};
  auto ps = planRequest(sample, f);
  REQUIRE_FALSE(ps);
  CHECK(ps.error().message.find(why) != std::string::npos);
  f.separateDebugFile.clear();  // the same facts with embedded DWARF: Delve serves
  CHECK(planRequest(sample, f)->backend == Backend::Delve);
  CHECK(planRequest(brk, f)->backend == Backend::Delve);
}

TEST_CASE("strategy: the rate decides between Delve and BPF against the budget") {
  TargetFacts f;
  f.hasDwarf = true;
  ProbeRequest r;
  r.action = Action::Break;
  r.capture.args = true;
  r.maxOverheadPct = 1.0;
  f.measuredRatePerS = 5;  // 5 hits/s x 1 ms = 0.5 % <= 1 %
  auto slow = planRequest(r, f);
  REQUIRE(slow);
  CHECK(slow->backend == Backend::Delve);
  CHECK(slow->fallback == Backend::Bpf);
  f.measuredRatePerS = 50;  // 5 % > 1 %
  auto fast = planRequest(r, f);
  REQUIRE(fast);
  CHECK(fast->backend == Backend::Bpf);
  CHECK(explainPlan(*fast).find("too much for Delve") != std::string::npos);
  r.maxOverheadPct = 10;  // a larger budget lets Delve take it
  CHECK(planRequest(r, f)->backend == Backend::Delve);
  CHECK(planRequest(r, f)->overBudget == Backend::Bpf);  // and BPF, if it costs more than thought
  f.measuredRatePerS.reset();  // unknown rate: the safe choice
  CHECK(planRequest(r, f)->backend == Backend::Bpf);
}

TEST_CASE("strategy: read prefers a zero-pause direct read of plain variables") {
  TargetFacts f;
  f.hasDwarf = true;
  f.readsArePlainVariables = true;
  ProbeRequest r;
  r.action = Action::Read;
  auto p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::DirectRead);
  CHECK(p->fallback == Backend::Delve);
  r.strategy = StrategyChoice::Delve;
  CHECK(planRequest(r, f)->backend == Backend::Delve);
  f.readsArePlainVariables = false;
  r.strategy = StrategyChoice::Auto;
  CHECK(planRequest(r, f)->backend == Backend::Delve);
}

TEST_CASE("strategy: results at return go to BPF whatever the rate — forced Delve says what it loses") {
  TargetFacts f;
  f.hasDwarf = true;
  f.measuredRatePerS = 0.1;  // Delve would fit the budget easily
  ProbeRequest r;
  r.action = Action::Trace;
  r.capture.args = r.capture.results = true;
  auto p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::Bpf);
  CHECK(p->fallback == Backend::Delve);
  CHECK(explainPlan(*p).find("return probes") != std::string::npos);
  r.strategy = StrategyChoice::Delve;
  auto d = planRequest(r, f);
  REQUIRE(d);
  CHECK(d->backend == Backend::Delve);
  CHECK(explainPlan(*d).find("no results") != std::string::npos);
}

TEST_CASE("strategy: float functions are weighed by their rate like the rest") {
  TargetFacts f;
  f.hasDwarf = true;
  f.floatArguments = true;
  ProbeRequest r;
  r.action = Action::Trace;
  r.capture.args = r.capture.results = true;
  // Rate unknown: BPF (floats <unavailable>), and the rate is to be measured.
  auto unknown = planRequest(r, f);
  REQUIRE(unknown);
  CHECK(unknown->backend == Backend::Bpf);
  CHECK(unknown->needsRate);
  CHECK(explainPlan(*unknown).find("<unavailable>") != std::string::npos);
  // ~100,000 calls a second: never Delve, whatever the floats.
  f.measuredRatePerS = 92000;
  auto hot = planRequest(r, f);
  REQUIRE(hot);
  CHECK(hot->backend == Backend::Bpf);
  CHECK_FALSE(hot->needsRate);
  CHECK(explainPlan(*hot).find("too much for Delve") != std::string::npos);
  CHECK(explainPlan(*hot).find("<unavailable>") != std::string::npos);
  // The issue's own case: --expect-rate 100000 --max-overhead 0.001 chose Delve.
  f.measuredRatePerS.reset();
  r.expectedRatePerS = 100000;
  r.maxOverheadPct = 0.001;
  CHECK(planRequest(r, f)->backend == Backend::Bpf);
  // ~10 a second fits the default budget: Delve reads the floats.
  r.expectedRatePerS.reset();
  r.maxOverheadPct = 1;
  f.measuredRatePerS = 10;
  auto slow = planRequest(r, f);
  REQUIRE(slow);
  CHECK(slow->backend == Backend::Delve);
  CHECK(explainPlan(*slow).find("XMM") != std::string::npos);
  CHECK(explainPlan(*slow).find("no results") != std::string::npos);
  // A dearer Delve stop on this host moves the line: 10 hits/s x 2 ms = 2 %.
  f.costs.delveStopNs = 2e6;
  CHECK(planRequest(r, f)->backend == Backend::Bpf);
  f.costs.delveStopNs = 1e6;
  f.runningProcess = false;  // -c: Delve cannot attach to it
  auto p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::Bpf);
  CHECK(explainPlan(*p).find("<unavailable>") != std::string::npos);
  f.runningProcess = true;
  f.matchedFunctions = 40;  // a breakpoint on each: never cheap
  CHECK(planRequest(r, f)->backend == Backend::Bpf);
  r.capture.exprs = {"x"};  // what only Delve can do stays Delve's
  CHECK(planRequest(r, f)->backend == Backend::Delve);
}

TEST_CASE("strategy: the BPF side of the weighing uses this host's per-hit cost of the placement") {
  TargetFacts f;
  f.hasDwarf = true;
  f.costs.emulatedNs = 400;
  f.costs.steppedNs = 5000;
  f.costs.returnNs = 4000;
  f.measuredRatePerS = 1000;
  ProbeRequest r;
  r.action = Action::Break;
  r.capture.args = true;
  auto cheap = planRequest(r, f);
  REQUIRE(cheap);
  CHECK(cheap->backend == Backend::Bpf);
  CHECK(explainPlan(*cheap).find("~0.4 us a hit here (emulated entry probe)") != std::string::npos);
  f.entryPlacement = Placement::Stepped;
  CHECK(explainPlan(*planRequest(r, f)).find("~5 us a hit here (single-stepped entry probe)") != std::string::npos);
  CHECK(explainFacts(f).find("costs: a hit here costs ~0.4 us (emulated probe)") != std::string::npos);
}

TEST_CASE("strategy: a stopped target (state T) never gets a Delve breakpoint or sample, read and set still work") {
  TargetFacts f;
  f.hasDwarf = true;
  f.stoppedPid = 42;
  for (Action a : kActions)
    for (StrategyChoice s : {StrategyChoice::Auto, StrategyChoice::Delve, StrategyChoice::Bpf})
      for (bool expr : {false, true}) {
        ProbeRequest r;
        r.action = a;
        r.strategy = s;
        if (a == Action::Sample) r.locations = {"main.f"};
        r.capture.args = true;
        if (expr) r.capture.exprs = {"main.x"};
        const std::string action = actionName(a);
        CAPTURE(action);
        CAPTURE(static_cast<int>(s));
        CAPTURE(expr);
        auto p = planRequest(r, f);
        const bool letsItRun = a == Action::Break || a == Action::Trace || a == Action::Sample;
        if (letsItRun) {
          if (p) {
            CHECK(p->backend != Backend::Delve);
            CHECK(p->fallback != Backend::Delve);
          } else if (s != StrategyChoice::Bpf) {
            CHECK(p.error().kind == ErrorKind::BadTarget);
            CHECK(p.error().message.find("PID 42 is stopped (state T") != std::string::npos);
            CHECK(p.error().hint.find("kill -CONT 42") != std::string::npos);
          }
        }
        // Delve's read and set leave it stopped (DelveSession::leaveStopped).
        if ((a == Action::Set || (a == Action::Read && s == StrategyChoice::Delve)) && p) CHECK(p->backend == Backend::Delve);
        if (a == Action::Set && s != StrategyChoice::Bpf) CHECK(p.has_value());
      }
  // auto with nothing only Delve can do: BPF, and --explain says why.
  ProbeRequest r;
  r.action = Action::Break;
  r.capture.args = true;
  auto p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::Bpf);
  CHECK(explainPlan(*p).find("PID 42 is stopped") != std::string::npos);
}

TEST_CASE("strategy: another debugger's hold is said once, with its own hint") {
  TargetFacts f;
  f.hasDwarf = true;
  f.delveBlockedBy = "PID 42 is already traced by PID 77 (gdb); a process can have one debugger at a time";
  f.delveBlockedHint = "wait for that session to end";
  ProbeRequest r;
  r.action = Action::Set;
  auto p = planRequest(r, f);
  REQUIRE(!p);
  CHECK(p.error().kind == ErrorKind::BadTarget);
  CHECK(p.error().hint == "wait for that session to end");
}

TEST_CASE("strategy: trace --filter goes either way, a prefix filter only to BPF") {
  TargetFacts f;  // DWARF, dlv, both privileges: both paths can serve
  f.hasDwarf = true;
  ProbeRequest r;
  r.action = Action::Trace;
  r.capture.args = true;
  r.expectedRatePerS = 1;  // slow enough for Delve
  r.filter = *parseFilter("n > 40");
  auto p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::Delve);  // the filter becomes the breakpoint's condition
  CHECK(explainPlan(*p).find("--filter") != std::string::npos);

  r.filter = *parseFilter(R"(name =~ "api*")");
  p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::Bpf);
  CHECK_FALSE(p->fallback.has_value());  // Delve could not take it over
  CHECK(explainPlan(*p).find("prefix") != std::string::npos);

  r.strategy = StrategyChoice::Delve;
  p = planRequest(r, f);
  REQUIRE_FALSE(p);
  CHECK(p.error().kind == ErrorKind::Usage);
  CHECK(p.error().message.find("--strategy delve cannot: a prefix filter") != std::string::npos);
}

TEST_CASE("strategy: --no-stop never plans Delve, as a plan or a fallback, and says why it refuses") {
  size_t plans = 0, refusals = 0;
  for (int bits = 0; bits < (1 << 8); bits++) {
    const TargetFacts f = factsOf(bits);
    for (Action a : kActions)
      for (StrategyChoice s : {StrategyChoice::Auto, StrategyChoice::Delve, StrategyChoice::Bpf})
        for (std::optional<double> rate : {std::optional<double>(), std::optional<double>(1.0), std::optional<double>(1e6)}) {
          ProbeRequest r;
          r.action = a;
          r.strategy = s;
          r.capture.args = true;
          r.expectedRatePerS = rate;
          r.neverStop = true;
          CAPTURE(bits);
          CAPTURE(actionName(a));
          auto p = planRequest(r, f);
          if (!p) {
            refusals++;
            continue;
          }
          plans++;
          CHECK(p->backend != Backend::Delve);
          CHECK(p->fallback != std::optional<Backend>(Backend::Delve));
        }
  }
  CHECK(plans > 100);
  CHECK(refusals > 100);
  // What only Delve serves is refused with --no-stop named.
  TargetFacts f;
  f.hasDwarf = true;
  f.readsArePlainVariables = false;
  ProbeRequest read;
  read.action = Action::Read;
  read.neverStop = true;
  auto p = planRequest(read, f);
  REQUIRE_FALSE(p);
  CHECK(p.error().message.find("--no-stop") != std::string::npos);
  read.neverStop = false;
  auto q = planRequest(read, f);
  REQUIRE(q);
  CHECK(q->backend == Backend::Delve);
  // A plain variable is read directly, with no fallback to Delve.
  f.readsArePlainVariables = true;
  read.neverStop = true;
  auto d = planRequest(read, f);
  REQUIRE(d);
  CHECK(d->backend == Backend::DirectRead);
  CHECK_FALSE(d->fallback.has_value());
}

TEST_CASE("strategy: sample without a function reads memory, never Delve, and is refused naming --at otherwise") {
  TargetFacts f;
  f.hasDwarf = true;
  f.runningProcess = true;
  f.dlvInstalled = true;
  f.ptracePrivileges = true;
  f.bpfPrivileges = true;
  ProbeRequest r;
  r.action = Action::Sample;
  r.capture.exprs = {"main.x"};
  f.readsArePlainVariables = true;
  auto p = planRequest(r, f);
  REQUIRE(p);
  CHECK(p->backend == Backend::DirectRead);
  CHECK(p->fallback != Backend::Delve);
  // What memory alone cannot answer: refused, with the reason and --at.
  f.readsArePlainVariables = false;
  f.directReadRefusal = "main.p.X: the field X is behind a pointer (main.p is *main.T): Delve follows it";
  auto q = planRequest(r, f);
  REQUIRE_FALSE(q);
  CHECK(q.error().message.find(f.directReadRefusal) != std::string::npos);
  CHECK(q.error().hint.find("--at FUNC") != std::string::npos);
  // No ptrace: memory cannot be read either.
  f.readsArePlainVariables = true;
  f.ptracePrivileges = false;
  CHECK_FALSE(planRequest(r, f));
  f.ptracePrivileges = true;
  for (StrategyChoice s : {StrategyChoice::Delve, StrategyChoice::Bpf}) {
    r.strategy = s;
    auto forced = planRequest(r, f);
    REQUIRE_FALSE(forced);
    CHECK(forced.error().message.find("without --at, sample reads from memory") != std::string::npos);
  }
}

TEST_CASE("strategy: a Delve session moves to BPF over its budget only when BPF serves the same request") {
  TargetFacts f;
  f.hasDwarf = true;
  f.measuredRatePerS = 5;  // Delve fits the budget
  ProbeRequest r;
  r.action = Action::Trace;
  r.capture.args = true;
  r.maxOverheadPct = 1.0;
  auto moves = planRequest(r, f);
  REQUIRE(moves);
  CHECK(moves->backend == Backend::Delve);
  CHECK(moves->overBudget == Backend::Bpf);
  // What only Delve does: an expression, locals, a condition, a file:line,
  // break's loading limits. Over budget such a session stays (and warns or
  // ends), since BPF would drop what was asked.
  auto stays = [&](ProbeRequest q, TargetFacts g = {}) {
    if (!g.hasDwarf) g = f;
    auto p = planRequest(q, g);
    REQUIRE(p);
    CHECK(p->backend == Backend::Delve);
    CHECK(!p->overBudget);
  };
  ProbeRequest e = r;
  e.capture.exprs = {"req.ID"};
  stays(e);
  ProbeRequest l = r;
  l.capture.locals = true;
  stays(l);
  ProbeRequest c = r;
  c.capture.cond = "n > 3";
  stays(c);
  TargetFacts fileLine = f;
  fileLine.locationsAreFunctions = false;
  stays(r, fileLine);
  ProbeRequest b = r;
  b.action = Action::Break;
  b.hitLimits.maxElements = 500;
  stays(b);
  // Without BPF privileges nothing to move to.
  TargetFacts noBpf = f;
  noBpf.bpfPrivileges = false;
  stays(r, noBpf);
  // --strategy delve with BPF at hand: the bound decides whether it acts
  // (--max-overhead); the plan says where it would go.
  ProbeRequest forced = r;
  forced.strategy = StrategyChoice::Delve;
  auto p = planRequest(forced, f);
  REQUIRE(p);
  CHECK(p->overBudget == Backend::Bpf);
}
