// Reading goscope's --json streams in tests. A trace, break, count or
// latency stream holds one object per call/hit/row plus, since issue #11,
// objects that are not calls: {"overhead_bound":{...}} when the bound acts,
// with -i an {"interval_cost":{...}} at each interval's end, and one
// {"session_cost":{...}} at the end. Tests that look at calls take
// callObjects(); the cost object is sessionCost().
#pragma once

#include <boost/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/run.hpp"

namespace goscope::test {

// Every JSON object line of `out` (lines that do not start with '{' skipped).
inline std::vector<boost::json::object> jsonObjects(const std::string& out) {
  std::vector<boost::json::object> v;
  for (const auto& l : splitLines(out))
    if (!l.empty() && l[0] == '{') v.push_back(boost::json::parse(l).as_object());
  return v;
}

// The objects of one function each (count's and latency's rows: they have "func").
inline std::vector<boost::json::object> functionObjects(const std::string& out) {
  std::vector<boost::json::object> v;
  for (auto& o : jsonObjects(out))
    if (o.contains("func")) v.push_back(std::move(o));
  return v;
}

inline bool isSessionNote(const boost::json::object& o) {
  return o.contains("session_cost") || o.contains("overhead_bound") || o.contains("interval_cost");
}

// The call/hit objects only.
inline std::vector<boost::json::object> callObjects(const std::string& out) {
  std::vector<boost::json::object> v;
  for (auto& o : jsonObjects(out))
    if (!isSessionNote(o)) v.push_back(std::move(o));
  return v;
}

// The line-by-line text of the call objects (for tests that compare lines).
inline std::vector<std::string> callLines(const std::string& out) {
  std::vector<std::string> v;
  for (const auto& l : splitLines(out)) {
    if (l.empty() || l[0] != '{') continue;
    if (!isSessionNote(boost::json::parse(l).as_object())) v.push_back(l);
  }
  return v;
}

// The session_cost object a stream ends with, if any.
inline std::optional<boost::json::object> sessionCost(const std::string& out) {
  for (auto& o : jsonObjects(out))
    if (o.contains("session_cost")) return o["session_cost"].as_object();
  return std::nullopt;
}

// count's and latency's final objects, {"func","count","final":true}, as
// func -> count (final objects without a func, e.g. --top's omitted, skipped).
inline std::map<std::string, int64_t> finalCounts(const std::string& out) {
  std::map<std::string, int64_t> m;
  for (auto& o : jsonObjects(out))
    if (o.contains("final") && o.contains("func")) m[std::string(o["func"].as_string())] = o["count"].as_int64();
  return m;
}

}  // namespace goscope::test
