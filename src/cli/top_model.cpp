#include "cli/top_model.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>

namespace goscope::cli::top {

namespace {

std::optional<boost::json::object> objectOf(const std::string& line) {
  boost::system::error_code ec;
  auto v = boost::json::parse(line, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return v.as_object();
}

std::optional<double> numberAt(const boost::json::object& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return std::nullopt;
  if (it->value().is_int64()) return static_cast<double>(it->value().as_int64());
  if (it->value().is_uint64()) return static_cast<double>(it->value().as_uint64());
  if (it->value().is_double()) return it->value().as_double();
  return std::nullopt;
}

std::optional<std::string> funcOf(const boost::json::object& o) {
  auto it = o.find("func");
  if (it == o.end() || !it->value().is_string()) return std::nullopt;
  return std::string(it->value().as_string());
}

bool isFinal(const boost::json::object& o) {
  auto it = o.find("final");
  return it != o.end() && it->value().is_bool() && it->value().as_bool();
}

bool isTrue(const boost::json::object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_bool() && it->value().as_bool();
}

// {"interval_cost":{...}}: the child's cost, when its session measured one.
std::optional<ChildCost> costOf(const boost::json::object& record) {
  auto c = record.find("interval_cost");
  if (c == record.end() || !c->value().is_object()) return std::nullopt;
  const auto& o = c->value().as_object();
  auto share = numberAt(o, "share_pct"), session = numberAt(o, "session_share_pct"), budget = numberAt(o, "budget_pct");
  if (!share || !session || !budget) return std::nullopt;
  return ChildCost{*share, *session, *budget, isTrue(o, "enforced")};
}

}  // namespace

Model::Entry& Model::entry(const std::string& func) {
  auto& e = rows_[func];
  e.row.func = func;
  return e;
}

Record Model::feedCount(const std::string& line) {
  auto o = objectOf(line);
  if (!o) return Record::Other;
  if (auto b = o->find("overhead_bound"); b != o->end()) {
    if (b->value().is_object()) {
      const auto& bo = b->value().as_object();
      auto m = bo.find("message");
      if (m != bo.end() && m->value().is_string()) bounds_.emplace_back(m->value().as_string());
    }
    return Record::Bound;
  }
  if (o->contains("session_cost")) return Record::Cost;
  if (auto ic = o->find("interval_cost"); ic != o->end()) {
    // The interval ended: a row it did not name was not called in it.
    if (ic->value().is_object())
      if (auto elapsed = numberAt(ic->value().as_object(), "elapsed_ms"))
        latestIntervalMs_ = std::max(latestIntervalMs_, static_cast<long long>(*elapsed));
    if (auto c = costOf(*o)) countCost_ = c;
    return Record::IntervalEnd;
  }
  auto func = funcOf(*o);
  auto count = numberAt(*o, "count");
  if (!func || !count) return Record::Other;
  auto& e = entry(*func);
  e.row.total = static_cast<uint64_t>(*count);
  if (isFinal(*o)) return Record::Final;
  auto elapsed = numberAt(*o, "elapsed_ms");
  auto rate = numberAt(*o, "rate");
  if (!elapsed || !rate) return Record::Other;
  // A newer interval: rows it does not name were not called in it.
  latestIntervalMs_ = std::max(latestIntervalMs_, static_cast<long long>(*elapsed));
  e.intervalMs = static_cast<long long>(*elapsed);
  e.row.rate = *rate;
  return Record::Interval;
}

Record Model::feedLatency(const std::string& line) {
  auto o = objectOf(line);
  if (!o) return Record::Other;
  if (o->contains("overhead_bound")) return feedCount(line);
  if (o->contains("session_cost")) return Record::Cost;
  if (o->contains("interval_cost")) {
    if (auto c = costOf(*o)) latencyCost_ = c;
    return Record::IntervalEnd;
  }
  auto func = funcOf(*o);
  if (!func) return Record::Other;
  auto p50 = numberAt(*o, "p50_ns");
  auto p99 = numberAt(*o, "p99_ns");
  auto count = numberAt(*o, "count");
  if (!p50 || !p99 || !count || *count <= 0) return isFinal(*o) ? Record::Final : Record::Other;
  if (isFinal(*o)) return Record::Final;  // the whole session's: the column shows the newest second
  auto& e = entry(*func);
  e.row.p50Ns = static_cast<uint64_t>(*p50);
  e.row.p99Ns = static_cast<uint64_t>(*p99);
  return Record::Interval;
}

std::vector<Row> Model::visible() const {
  std::vector<Row> out;
  for (const auto& [name, e] : rows_) {
    if (!filter_.empty() && name.find(filter_) == std::string::npos) continue;
    Row r = e.row;
    if (e.intervalMs != latestIntervalMs_) r.rate = 0;
    out.push_back(std::move(r));
  }
  auto key = [this](const Row& r) -> double {
    switch (sort_) {
      case SortBy::Rate: return r.rate;
      case SortBy::Total: return static_cast<double>(r.total);
      case SortBy::P50: return r.p50Ns ? static_cast<double>(*r.p50Ns) : -1;
      case SortBy::P99: return r.p99Ns ? static_cast<double>(*r.p99Ns) : -1;
      case SortBy::Name: return 0;
    }
    return 0;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Row& a, const Row& b) {
    if (sort_ != SortBy::Name) {
      const double ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
    }
    return a.func < b.func;
  });
  return out;
}

std::string Model::costLine() const {
  if (!countCost_ && !latencyCost_) return "";
  double now = 0, since = 0;
  std::string parts;
  const ChildCost* any = nullptr;
  for (const auto& [name, c] : {std::pair{"count", &countCost_}, std::pair{"latency", &latencyCost_}}) {
    if (!*c) continue;
    now += (*c)->sharePct;
    since += (*c)->sessionSharePct;
    parts += std::string(parts.empty() ? "" : " + ") + name + " " + formatPct((*c)->sessionSharePct) + "%";
    any = &**c;
  }
  std::string budget = "budget " + formatPct(any->budgetPct) + "%";
  if (countCost_ && latencyCost_) budget = parts + "; " + budget + " each";
  if (any->enforced) budget += ", enforced";
  return "cost to the target: " + formatPct(now) + "% of one CPU in the last second, " + formatPct(since) +
         "% since attached (" + budget + ")";
}

std::string rowText(const Row& r, bool latency) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%10.0f %12llu", r.rate, static_cast<unsigned long long>(r.total));
  std::string s = buf;
  if (latency) {
    std::snprintf(buf, sizeof buf, " %9s %9s", r.p50Ns ? formatNs(*r.p50Ns).c_str() : "-",
                  r.p99Ns ? formatNs(*r.p99Ns).c_str() : "-");
    s += buf;
  }
  return s + "  " + r.func;
}

std::string headerText(SortBy by, bool latency) {
  auto col = [by](SortBy c, const char* name, int width) {
    std::string n = c == by ? std::string("[") + name + "]" : name;
    return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(n.size()))), ' ') + n;
  };
  std::string s = col(SortBy::Rate, "CALLS/S", 10) + " " + col(SortBy::Total, "TOTAL", 12);
  if (latency) s += " " + col(SortBy::P50, "P50", 9) + " " + col(SortBy::P99, "P99", 9);
  return s + "  " + (by == SortBy::Name ? "[FUNCTION]" : "FUNCTION");
}

std::string formatPct(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, pct < 1 ? "%.3f" : "%.2f", pct);
  return buf;
}

std::string formatNs(uint64_t ns) {
  char buf[32];
  if (ns < 1000) std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000) std::snprintf(buf, sizeof buf, "%.1fus", static_cast<double>(ns) / 1e3);
  else if (ns < 1000000000) std::snprintf(buf, sizeof buf, "%.1fms", static_cast<double>(ns) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace goscope::cli::top
