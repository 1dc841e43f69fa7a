// The output layer: every record a subcommand prints goes through one
// Output, whose two implementations are the two formats (text lines for
// people, one JSON object per line for programs). A new format is one new
// class (bpftrace's Output is the model). Values print through the one value
// renderer (value/render.hpp), whichever path produced them.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include "probe/argument_sources.hpp"
#include "api/goscope.hpp"
#include "probe/latency_stats.hpp"
#include "process/namespaces.hpp"
#include "strategy/cost_choice.hpp"
#include "strategy/host_costs.hpp"
#include "value/value.hpp"

namespace goscope::output {

// Which parts of a breakpoint hit are shown: what the user asked for.
struct HitShape {
  bool exprs = false;
  bool args = false;
  bool locals = false;
  int stack = 0;  // frames shown, 0: none
};

class Output {
 public:
  virtual ~Output() = default;

  // goscope trace: one call, at its return (BPF) or its entry (Delve).
  virtual void traceCall(const api::Call& call, bool stack) = 0;
  // goscope break: the `hit`-th hit.
  virtual void breakHit(const api::Call& call, long long hit, const HitShape& shape) = 0;
  // goscope sample: a sample that caught FUNC (`call`) or missed it, or,
  // without --at, the expressions read from memory (`values`, each named by
  // its expression; the target not stopped).
  struct Sample {
    int index = 0;
    double elapsedS = 0;
    double pauseMs = 0;
    const api::Call* call = nullptr;  // nullptr: a miss, unless `values`
    std::string function;             // FUNC, for a miss
    double timeoutS = 0;              // how long a miss waited
    const std::vector<Value>* values = nullptr;  // read from memory
  };
  virtual void sample(const Sample& s, const HitShape& shape) = 0;
  // goscope read: one expression's value.
  virtual void readValue(const std::string& expr, const Value& value) = 0;
  // goscope set: a variable before and after the write.
  virtual void change(const std::string& var, const Value& before, const Value& after) = 0;

  // One interval report (count -i, latency -i, trace --folded -i): when it
  // ends and what it covers, as bcc's tools head theirs.
  struct Interval {
    double elapsedS = 0;  // seconds since the probes were attached, at its end (JSON's elapsed_ms)
    double lengthS = 0;   // how long it lasted (JSON's interval_ms)
    size_t omitted = 0;   // rows left out by --top
    // > 0: read this long after it was due (goscope was not run on time: a
    // loaded machine), set by the caller when it is worth saying; `skipped`:
    // intervals that passed with no report of their own, folded into this one.
    double lateS = 0;
    int skipped = 0;
    // How long the oldest interval folded in waited (lateS when none was
    // skipped), and of that, at most, goscope's own work since it last
    // looked at the clock (the last report's reading and printing, a drain).
    // When that is half of it or more, the line says so instead of "not run
    // on time".
    double overdueS = 0;
    double ownS = 0;
    // What the session's probes took from the target (BPF), in % of one CPU
    // as the session_cost's share_pct: over this interval and since the
    // probes were attached, and the budget they run under.
    struct Cost {
      double cpuMs = 0, sharePct = 0;
      double sessionCpuMs = 0, sessionSharePct = 0;
      double budgetPct = 0;
      bool enforced = false;
    };
    std::optional<Cost> cost;
  };
  // goscope count, each interval: the functions called in it, most called first.
  struct CountRow {
    std::string func;
    uint64_t count = 0;  // since the probes were attached
    uint64_t delta = 0;  // in this interval
    double rate = 0;     // delta per second
    double elapsedS = 0;
  };
  virtual void countInterval(const Interval& interval, const std::vector<CountRow>& rows) = 0;
  // The end of an interval report of count or latency, whatever it showed
  // (also none: no function was called): its cost to the target when known.
  // JSON: an {"interval_cost":{...}} object; text: nothing (the cost line
  // comes at the session's end).
  virtual void intervalEnd(const Interval& interval) = 0;
  // goscope count, at the end: every function called, most called first.
  struct CountTotal {
    std::string func;
    uint64_t count = 0;
    std::optional<double> droppedAtS;  // the overhead bound removed its probe then; count is up to that moment
  };
  // `omitted`: functions called but left out by --top.
  virtual void countTotals(const std::vector<CountTotal>& rows, size_t omitted) = 0;
  // count --read VAR: its value at the last hit (none yet: no hit) and its own rate of change;
  // `elapsedS`: seconds since the probes were attached (JSON's elapsed_ms).
  virtual void globalRead(const std::string& var, std::optional<int64_t> value, std::optional<long long> rate,
                          double elapsedS) = 0;
  // goscope latency: one function's aggregate, of one interval (`interval`
  // set: -i) or of the whole session (`final`), `elapsedS` seconds after the
  // probes were attached (JSON's elapsed_ms); the text histogram in `unit`.
  struct LatencyReport {
    bool final = false;
    double elapsedS = 0;
    std::optional<Interval> interval;
    TimeUnit unit = TimeUnit::Ns;
    // What the probes add to each measured call (estimated; 0: unknown) and
    // where the figures come from: said beside the histogram.
    double probeCostNs = 0;
    double probeCostLowNs = 0;  // > 0: probeCostNs is the top of a range, this its bottom
    std::string costFigures;
  };
  virtual void latency(const std::string& func, const LatencyStats& stats, const LatencyReport& report) = 0;

  // goscope list: one function of the binary.
  struct FunctionRow {
    std::string name;
    std::optional<std::string> signature;  // from DWARF, or its receiver's method table, when known
    // Where trace would type its arguments from (probe/argument_sources.hpp:
    // "dwarf", "interface", "layout", "none"); empty for an inlined body.
    std::string signatureFrom;
    // "layout": the runtime's grouping of its argument words, `({w, {w, w}}, w)`.
    std::optional<std::string> layout;
    // The entry; an inlined body's first probed instruction; none for an
    // inlined body left out (JSON null: no address of its own).
    std::optional<uint64_t> entry;
    uint64_t size = 0;
    std::string file;
    int64_t line = 0;
    std::vector<uint64_t> returns;   // RET instructions
    // Set when `returns` is not known to be complete (the function does not
    // decode to its end): JSON prints "returns": null and this as returns_reason.
    std::optional<std::string> returnsReason;
    std::optional<uint64_t> probe;   // where the entry probe goes; none: not probe-able
    std::string probeKind;           // "stack-check-branch", "entry", "none"
    std::string probeReason;         // why that placement, or why none
    // An inlined body: the function it sits in (file:line are then the
    // call's position there, entry the first probed instruction, size 0)
    // and how many of its instructions are probed (0: left out).
    std::optional<std::string> inlinedInto;
    size_t sites = 0;
    // probeKind "call-sites": how many `call`s are probed instead of the entry.
    std::optional<size_t> callSites;
    // A stepped entry whose call sites were not used: why (JSON call_sites_reason).
    std::optional<std::string> callSitesReason;
  };
  virtual void function(const FunctionRow& row) = 0;
  // goscope info: what goscope knows about a binary or process.
  struct TargetInfo {
    std::optional<int> pid;
    std::string exe;
    std::optional<uint64_t> loadBias;
    std::optional<std::string> goVersion, mainPath, mainModule;
    bool pie = false, symtab = false, dwarf = false;
    // Where the DWARF comes from: "embedded", "debug-file", "build-id",
    // "debuglink" or "none" (debugInfoSourceName), and the file read.
    std::string debugInfoSource = "none";
    std::string debugInfoPath;
    std::string pclntabFormat;
    size_t functions = 0;
    std::optional<uint64_t> goidOffset;
    std::string goidOffsetHow;  // how it was found ("DWARF", "runtime.newproc1's store at 0x..."), or why it is assumed
    bool goidOffsetAssumed = false;  // not found: the probes use Go's usual offset
    // -p: the process's namespaces (a container's process: docs/containers.md).
    std::optional<ProcessNamespaces> namespaces;
    // The dlv goscope would run for it, and why (docs/delve.md, "Which Delve").
    std::optional<api::DelveChoiceInfo> delve;
    // A truncated executable (GoBinary::Truncation): its size, the size its
    // headers describe, what is missing of the file and what is lost of the
    // program for it.
    struct Truncated {
      uint64_t fileBytes = 0, describedBytes = 0;
      std::vector<std::string> missing, lost;
    };
    std::optional<Truncated> truncated;
    // --arguments: where trace would type each function's arguments from.
    std::optional<ArgumentSources> arguments;
  };
  virtual void targetInfo(const TargetInfo& info) = 0;
  // goscope doctor: the process's code against its file.
  virtual void doctor(const api::DoctorReport& report) = 0;

  // trace --folded -i: the head of one interval's stacks (text: a stamped
  // line; JSON: nothing, each stack carries its interval).
  virtual void foldedInterval(const Interval& interval) = 0;
  // trace --folded: one stack, its frames root first joined by ';' (as
  // flamegraph.pl reads them), and how often it was seen: in the session,
  // or (`interval`) in one -i report.
  virtual void foldedStack(const std::string& stack, uint64_t count, const std::optional<Interval>& interval) = 0;
  // goscope top --batch: one screen as its view drew it, line by line (text:
  // the lines, a blank line before each screen but the first, written out at
  // once; JSON: {"screen":[lines]}).
  virtual void screen(const std::vector<std::string>& lines) = 0;
  // goscope calibrate: what plans use from now on (`use`), beside what this
  // run measured (`now`, when it did).
  virtual void calibration(const HostCosts& use, const std::optional<ProbeMeasure>& now) = 0;
  // goscope overhead: one row per mode, the target's rate under it.
  struct OverheadRow {
    std::string mode;
    std::string error;        // not empty: the mode could not be measured, and why
    double opsPerS = 0;       // median of the rounds
    double slowdown = 0;      // the no-probe rate / this one
    std::vector<double> runs;  // each round's rate
    std::optional<double> perHitNs;  // what a hit adds to an operation
    bool perHitFromCpu = false;      // from the target's CPU time (else wall time)
    std::optional<double> expectedNs;  // what the strategy plans with
  };
  // `costs`: where the expected figures come from.
  virtual void overheadTable(const std::vector<OverheadRow>& rows, const HostCosts& costs) = 0;

  // What the overhead bound did, as it happens (text: a stderr line; JSON: an object too).
  virtual void bound(const api::BoundAction& action) = 0;
  // What the session cost the target (text: a stderr line; JSON: an object too).
  virtual void sessionCost(const api::SessionCost& cost) = 0;

  // Everything written so far reaches stdout now.
  virtual void flush() = 0;
  // False once nobody reads stdout any more (`| head`): stop producing.
  virtual bool open() const = 0;
};

std::unique_ptr<Output> makeOutput(bool json);

// After a text interval header, when the interval was read late: " (0.42 s
// late: goscope was not run on time)", with the intervals it covers when it
// folded some in, or, when goscope's own work took half the wait or more,
// " (0.52 s late, covering 2 intervals: goscope's own work took 1.40 s)";
// "" otherwise.
std::string lateText(const Output::Interval& in);
// Why a reading kept its readers waiting `waitS`, given `ownS` of goscope's
// own work in that time: "goscope's own work took 1.40 s" when that is at
// least half of it, else "goscope was not run on time".
std::string lateCause(double waitS, double ownS);

}  // namespace goscope::output
