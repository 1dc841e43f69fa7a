// How sample and break print what a breakpoint captured: one text line or
// one JSON object per hit, with only the parts that were asked for.
#pragma once

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/delve/delve_session.hpp"

namespace goscope::cli {

struct CaptureParts {
  std::vector<std::string> exprs;  // evaluated at each hit
  bool args = false;
  bool locals = false;
  int stack = 0;  // frames shown, 0: none
};

// The breakpoint that captures `parts` at `location` (Delve's stack depth
// counts callers: N frames need depth N, the extra one is dropped).
delve::BreakpointSpec captureSpec(const std::string& location, const CaptureParts& parts);

// "12:04:05.123" (local time) and "2025-01-02T12:04:05.123Z" (UTC).
std::string clockText(std::chrono::system_clock::time_point t);
std::string isoTime(std::chrono::system_clock::time_point t);

// "g1 main.mayPanic(i=7) funcs.go:287 | main.counter=5 | locals: ... | stack: f file:line <- ..."
std::string hitText(const delve::BreakpointHit& hit, const CaptureParts& parts);
// {"goroutine","function","file","line", and "values","args","locals","stack" when asked}
boost::json::object hitJson(const delve::BreakpointHit& hit, const CaptureParts& parts);

// Delve evaluates a breakpoint's expressions at each hit and marks those it
// cannot evaluate unreadable instead of failing: an unknown symbol or a
// syntax error in one of the user's expressions, as an error.
std::optional<Error> captureError(const delve::BreakpointHit& hit);

// Before the first hit: a syntax error in an expression (Delve's parser
// answers the same in any scope). Unknown names are left for the hit to
// judge: they may be FUNC's locals.
std::optional<Error> syntaxError(delve::DelveSession& session, const std::vector<std::string>& exprs);

// The breakpoint loop of break (and of trace's Delve plan): continue, hand
// each hit of one of `breakpointIds` to `onHit` (which returns false to
// stop), until `maxHits` (0: no limit), `durationS` (0: none), a stop signal,
// or an error. The first hit's captures are checked (captureError).
enum class HitLoopEnd { Count, Duration, Signal, Stopped };
const char* describe(HitLoopEnd e);
struct HitLoopResult {
  long long hits = 0;
  double activeS = 0;  // from the first continue to the end
  HitLoopEnd end = HitLoopEnd::Signal;
  std::optional<Error> failed;
};
HitLoopResult runHitLoop(delve::DelveSession& session, const std::vector<int64_t>& breakpointIds, long long maxHits,
                         double durationS, const std::function<bool(const delve::BreakpointHit&)>& onHit);

}  // namespace goscope::cli
