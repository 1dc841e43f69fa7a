// goscope top's table: fed the JSON lines count and latency print (the keys
// as `count --json -i 1` and `latency --json -i 1` print them), sorted and
// filtered.
#include <doctest/doctest.h>

#include "cli/top_model.hpp"

using namespace goscope::cli::top;

namespace {

std::vector<std::string> names(const Model& m) {
  std::vector<std::string> v;
  for (const auto& r : m.visible()) v.push_back(r.func);
  return v;
}

void feedSecondOne(Model& m) {
  m.feedCount(R"({"func":"main.scale","count":203,"delta":203,"rate":203,"elapsed_ms":1000,"interval_ms":1000})");
  m.feedCount(R"({"func":"main.report","count":1,"delta":1,"rate":1,"elapsed_ms":1000,"interval_ms":1000})");
  m.feedCount(R"({"func":"main.doWork","count":5000,"delta":5000,"rate":5000,"elapsed_ms":1000,"interval_ms":1000})");
}

}  // namespace

TEST_CASE("top model: interval rows give calls/s and totals, most called first") {
  Model m;
  feedSecondOne(m);
  CHECK(names(m) == std::vector<std::string>{"main.doWork", "main.scale", "main.report"});
  auto rows = m.visible();
  CHECK(rows[1].rate == 203);
  CHECK(rows[1].total == 203);
}

TEST_CASE("top model: a function missing from the newest interval was not called in it: rate 0, total kept") {
  Model m;
  feedSecondOne(m);
  CHECK(m.feedCount(R"({"func":"main.scale","count":393,"delta":190,"rate":190,"elapsed_ms":2000,"interval_ms":1000})") ==
        Record::Interval);
  auto rows = m.visible();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].func == "main.scale");
  CHECK(rows[0].rate == 190);
  CHECK(rows[0].total == 393);
  CHECK(rows[1].func == "main.doWork");
  CHECK(rows[1].rate == 0);
  CHECK(rows[1].total == 5000);
  // An interval in which nothing was called has no row, only its end.
  CHECK(m.feedCount(R"({"interval_cost":{"elapsed_ms":3000,"interval_ms":1000,"cpu_ms":0,"share_pct":0,"session_cpu_ms":1.2,"session_share_pct":0.04,"budget_pct":1,"enforced":false}})") ==
        Record::IntervalEnd);
  for (const auto& r : m.visible()) CHECK(r.rate == 0);
  CHECK(m.visible()[0].total == 5000);
}

TEST_CASE("top model: sort by total, name, p50, p99") {
  Model m;
  feedSecondOne(m);
  m.feedCount(R"({"func":"main.report","count":9000,"delta":1,"rate":1,"elapsed_ms":2000,"interval_ms":1000})");
  m.sortBy(SortBy::Total);
  CHECK(names(m) == std::vector<std::string>{"main.report", "main.doWork", "main.scale"});
  m.sortBy(SortBy::Name);
  CHECK(names(m) == std::vector<std::string>{"main.doWork", "main.report", "main.scale"});
  CHECK(m.feedLatency(R"({"func":"main.scale","count":201,"min_ns":5971,"p50_ns":7527,"p90_ns":9259,"p99_ns":37888,"max_ns":61036,"elapsed_ms":1000,"interval_ms":1000})") ==
        Record::Interval);
  m.feedLatency(R"({"func":"main.report","count":1,"p50_ns":90000,"p99_ns":90000,"elapsed_ms":1000,"interval_ms":1000})");
  m.sortBy(SortBy::P50);
  CHECK(names(m) == std::vector<std::string>{"main.report", "main.scale", "main.doWork"});  // no latency last
  m.feedLatency(R"({"func":"main.scale","count":200,"p50_ns":7000,"p99_ns":200000,"elapsed_ms":2000,"interval_ms":1000})");
  m.sortBy(SortBy::P99);
  CHECK(names(m) == std::vector<std::string>{"main.scale", "main.report", "main.doWork"});
  auto rows = m.visible();
  CHECK(rows[0].p50Ns == 7000u);
  CHECK(rows[0].p99Ns == 200000u);
}

TEST_CASE("top model: the session's final latency record does not replace the newest second's") {
  Model m;
  m.feedLatency(R"({"func":"main.scale","count":201,"p50_ns":7527,"p99_ns":37888,"elapsed_ms":1000,"interval_ms":1000})");
  CHECK(m.feedLatency(R"({"func":"main.scale","count":586,"p50_ns":1,"p99_ns":2,"elapsed_ms":2952,"final":true})") ==
        Record::Final);
  CHECK(m.visible()[0].p50Ns == 7527u);
}

TEST_CASE("top model: the filter keeps names containing it") {
  Model m;
  feedSecondOne(m);
  m.setFilter("sc");
  CHECK(names(m) == std::vector<std::string>{"main.scale"});
  m.setFilter("nothing");
  CHECK(m.visible().empty());
  m.setFilter("");
  CHECK(m.visible().size() == 3);
}

TEST_CASE("top model: bound actions, totals, the cost and anything else") {
  Model m;
  CHECK(m.feedCount(R"({"overhead_bound":{"action":"dropped","func":"main.doWork","message":"dropped main.doWork: 3% > 1%"}})") ==
        Record::Bound);
  REQUIRE(m.boundMessages().size() == 1);
  CHECK(m.boundMessages()[0] == "dropped main.doWork: 3% > 1%");
  CHECK(m.feedCount(R"({"func":"main.scale","count":531,"final":true})") == Record::Final);
  CHECK(m.visible()[0].total == 531);
  CHECK(m.feedCount(R"({"session_cost":{"elapsed_ms":2694}})") == Record::Cost);
  CHECK(m.feedCount("not json") == Record::Other);
  CHECK(m.feedCount(R"({"omitted":3})") == Record::Other);
  CHECK(m.rowCount() == 1);
}

TEST_CASE("top model: the cost line comes from the children's interval_cost records") {
  Model m;
  CHECK(m.costLine().empty());  // before the first interval ended
  CHECK(m.feedCount(R"({"interval_cost":{"elapsed_ms":1000,"interval_ms":1000,"cpu_ms":1.31,"share_pct":0.131,"session_cpu_ms":1.31,"session_share_pct":0.1305,"budget_pct":1,"enforced":false}})") ==
        Record::IntervalEnd);
  REQUIRE(m.countCost());
  CHECK(m.countCost()->sharePct == doctest::Approx(0.131));
  CHECK(m.countCost()->sessionSharePct == doctest::Approx(0.1305));
  CHECK(m.costLine() == "cost to the target: 0.131% of one CPU in the last second, 0.131% since attached (budget 1.00%)");
  // The newest record replaces the one before; enforced is said.
  m.feedCount(R"({"interval_cost":{"elapsed_ms":2000,"interval_ms":1000,"cpu_ms":40,"share_pct":4,"session_cpu_ms":41.3,"session_share_pct":2.066,"budget_pct":5,"enforced":true}})");
  CHECK(m.costLine() == "cost to the target: 4.00% of one CPU in the last second, 2.07% since attached (budget 5.00%, enforced)");
  // With latency, the two sessions' costs are summed and each is named.
  CHECK(m.feedLatency(R"({"interval_cost":{"elapsed_ms":1000,"interval_ms":1000,"cpu_ms":15,"share_pct":1.5,"session_cpu_ms":15,"session_share_pct":1.5,"budget_pct":5,"enforced":true}})") ==
        Record::IntervalEnd);
  CHECK(m.costLine() ==
        "cost to the target: 5.50% of one CPU in the last second, 3.57% since attached (count 2.07% + latency 1.50%; budget "
        "5.00% each, enforced)");
  // A record without the cost (off the BPF path) ends the interval, and keeps the newest cost.
  CHECK(m.feedCount(R"({"interval_cost":{"elapsed_ms":3000,"interval_ms":1000}})") == Record::IntervalEnd);
  CHECK(m.countCost()->sharePct == doctest::Approx(4));
}

TEST_CASE("top model: shares of a CPU as the cost line prints them") {
  CHECK(formatPct(0) == "0.000");
  CHECK(formatPct(0.0123) == "0.012");
  CHECK(formatPct(0.999) == "0.999");
  CHECK(formatPct(1) == "1.00");
  CHECK(formatPct(97.04) == "97.04");
}

TEST_CASE("top model: durations for the columns") {
  CHECK(formatNs(850) == "850ns");
  CHECK(formatNs(7527) == "7.5us");
  CHECK(formatNs(12300000) == "12.3ms");
  CHECK(formatNs(1200000000) == "1.20s");
}
