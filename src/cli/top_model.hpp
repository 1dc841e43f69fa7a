// The table `goscope top` shows, apart from any terminal: one row per
// function, fed the JSON lines of its `count --json -i 1` and `latency
// --json -i 1` children (docs/commands/count.md, latency.md), sorted by a
// column and filtered by a substring. Pure state, so it is unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace goscope::cli::top {

enum class SortBy { Rate, Total, Name, P50, P99 };

struct Row {
  std::string func;
  double rate = 0;      // calls/s in the count child's newest interval (0 when not called in it)
  uint64_t total = 0;   // calls since the count child attached
  std::optional<uint64_t> p50Ns, p99Ns;  // the newest latency interval the function was called in
};

// What one line of a child's stdout was: an interval's row, the end of an
// interval ({"interval_cost":...}, after its rows, also when none), a
// total, a budget action, the session's cost at its end.
enum class Record { Interval, IntervalEnd, Final, Bound, Cost, Other };

// One child's newest interval_cost record: what its probes took from the
// target, in % of one CPU.
struct ChildCost {
  double sharePct = 0;         // over its newest interval
  double sessionSharePct = 0;  // since its probes were attached
  double budgetPct = 0;
  bool enforced = false;
};

class Model {
 public:
  // A line of `count --json -i N`: interval rows ({"func","count","delta",
  // "rate","elapsed_ms",...}), each interval's end ({"interval_cost":
  // {"elapsed_ms","share_pct","session_share_pct","budget_pct",...}}),
  // totals ({"func","count","final":true}), {"overhead_bound":{...,"message"}}
  // and {"session_cost":{...}}.
  Record feedCount(const std::string& line);
  // A line of `latency --json -i N`: {"func","count","p50_ns","p99_ns","elapsed_ms",...},
  // and the same interval_cost, overhead_bound and session_cost records.
  Record feedLatency(const std::string& line);

  void sortBy(SortBy s) { sort_ = s; }
  SortBy sortedBy() const { return sort_; }
  void setFilter(std::string f) { filter_ = std::move(f); }
  const std::string& filter() const { return filter_; }

  // The rows to show: those whose name contains the filter, in sort order
  // (numbers highest first, names A to Z; ties by name).
  std::vector<Row> visible() const;
  size_t rowCount() const { return rows_.size(); }
  // The overhead bound's actions so far, oldest first (their "message").
  const std::vector<std::string>& boundMessages() const { return bounds_; }
  // The children's newest interval_cost records (none before the first).
  const std::optional<ChildCost>& countCost() const { return countCost_; }
  const std::optional<ChildCost>& latencyCost() const { return latencyCost_; }
  // The line at the bottom: "cost to the target: X% of one CPU in the
  // last second, Y% since attached (budget B%)", both children's summed
  // (each named) when latency runs too; "" before the first interval ended.
  std::string costLine() const;

 private:
  struct Entry {
    Row row;
    long long intervalMs = -2;  // elapsed_ms of the count interval its rate is from
  };
  Entry& entry(const std::string& func);
  std::map<std::string, Entry> rows_;
  long long latestIntervalMs_ = -1;
  SortBy sort_ = SortBy::Rate;
  std::string filter_;
  std::vector<std::string> bounds_;
  std::optional<ChildCost> countCost_, latencyCost_;
};

// The table's lines, on a screen and in --batch: the header (the sorted
// column in brackets) and a row (calls/s, total, with `latency` p50 and
// p99, then the name).
std::string headerText(SortBy by, bool latency);
std::string rowText(const Row& r, bool latency);

// A share of one CPU for the cost line: "0.012", "3.40" (numbers, so that
// they read and compare as the session_cost's share_pct).
std::string formatPct(double pct);

// A duration for a column: 850ns, 7.5us, 12.3ms, 1.20s.
std::string formatNs(uint64_t ns);

}  // namespace goscope::cli::top
