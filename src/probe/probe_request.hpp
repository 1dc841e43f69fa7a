// ProbeRequest: what the user asks, whichever subcommand asked it — target,
// locations, what to capture, how often it is expected to fire, how much
// overhead is acceptable, for how long. The strategy layer plans it onto a
// backend; the subcommands only build it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "probe/filter_expr.hpp"
#include "probe/pattern.hpp"
#include "process/target_spec.hpp"
#include "util/result.hpp"

namespace goscope {

enum class Action { List, Info, Count, Latency, Trace, Read, Sample, Break, Set };
const char* actionName(Action a);

enum class StrategyChoice { Auto, Delve, Bpf };

struct CaptureSpec {
  bool args = false;
  bool results = false;
  bool locals = false;
  bool stack = false;
  int stackFrames = 0;               // frames kept per call (0: every frame the path gives)
  uint16_t maxString = 64;           // bytes of each string argument read (trace --max-string)
  std::vector<std::string> exprs;    // Go expressions evaluated at the location (Delve)
  std::optional<std::string> cond;   // a Go condition for a hit to count (Delve)
};

// How much of a value a one-off read loads, on either path (the direct
// read's limits, Delve's LoadConfig): Delve's own defaults for a read, as
// `goscope read` has always asked for them. `read --max-string`,
// `--max-elements` and `--max-depth` set them.
struct ReadLimits {
  uint32_t maxString = 256;   // bytes of each string
  uint32_t maxElements = 64;  // elements of each slice, array or map
  int maxDepth = 2;           // levels of nested values below the top (Delve's MaxVariableRecurse)
};

// What Delve loads of each value captured at a hit (sample --max-string,
// --max-elements, --max-depth): its per-hit defaults (rpc kDefaultLoadConfig),
// smaller than a one-off read's, since the target waits for every hit's load.
inline constexpr ReadLimits kHitReadLimits{64, 64, 1};

// The most a BPF probe reads of one string (its reads are at most 256 bytes
// each: bpf/goscope_shared.h's GS_MAX_READ); trace's --max-string range.
inline constexpr uint32_t kProbeMaxString = 256;

// break's --max-* that only Delve's loading honours: other element or depth
// limits than its per-hit defaults, or strings longer than a probe reads.
inline bool needsDelveLoading(const ReadLimits& l) {
  return l.maxElements != kHitReadLimits.maxElements || l.maxDepth != kHitReadLimits.maxDepth ||
         l.maxString > kProbeMaxString;
}

struct ProbeRequest {
  Action action = Action::Count;
  TargetSpec target;
  std::vector<std::string> locations;  // function patterns (break: also Delve's locations)
  // `locations` as patterns, parsed once (parseLocations) and used by every
  // stage after; empty until then.
  std::vector<Pattern> patterns;
  // User signatures for stripped binaries, by function name, each already
  // parsed and laid out once ('main.add(x int, y int) int').
  std::map<std::string, std::string> signatures;
  long long maxHits = 0;  // break -n: stop after this many calls (0: no limit)
  // trace/count --filter, parsed once: only calls whose arguments pass it
  // are counted or sent (BPF: tested in the kernel; Delve: the breakpoint's
  // condition, without prefixes).
  std::optional<FilterExpr> filter;
  CaptureSpec capture;
  ReadLimits readLimits;                   // read: how much of each value is loaded
  ReadLimits hitLimits = kHitReadLimits;   // sample: how much of each value captured at a hit is loaded
  std::vector<std::pair<std::string, std::string>> writes;  // set: VAR=VALUE
  std::optional<std::string> readVariable;  // count --read: a global read on each hit of the first function
  bool plainEntry = false;                  // --entry (count, latency, trace): the function's first instruction, not the jbe or call sites
  bool ignoreMissing = false;               // --ignore-missing: a pattern that matches nothing is not an error
  std::optional<double> expectedRatePerS;  // hits per second, if the user knows
  double maxOverheadPct = 1.0;             // --max-overhead PCT: share of the target's time the probes may take
  bool maxOverheadExplicit = false;        // given: the session enforces it live (else BPF only warns)
  double rateWindowS = 0.25;               // how long the in-kernel count that measures the rate runs
  double durationS = 0;
  double intervalS = 0;
  StrategyChoice strategy = StrategyChoice::Auto;
  bool neverStop = false;            // --no-stop: a path that stops the target (Delve) is refused, never chosen
  std::vector<std::string> dlvArgs;  // --dlv-arg: passed to dlv attach
  std::string dlvPath;               // --dlv: the dlv to run (empty: $GOSCOPE_DLV, else the one whose window covers the target)
};

// Parses request.locations as function patterns into request.patterns.
// Errors: Usage, naming the pattern that does not parse.
Result<void> parseLocations(ProbeRequest& request);

// request.patterns, or — for a caller that did not parse them (a program on
// the API) — request.locations parsed now.
Result<std::vector<Pattern>> patternsOf(const ProbeRequest& request);

}  // namespace goscope
