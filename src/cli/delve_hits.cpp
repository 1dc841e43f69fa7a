#include "cli/delve_hits.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>

#include "backend/delve/value_render.hpp"
#include "rpc/delve_errors.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

constexpr uint16_t kReturnArgument = 16;  // api.VariableReturnArgument

// At a function's entry its results are not computed yet: leave them out.
std::vector<const rpc::Variable*> arguments(const delve::BreakpointHit& h) {
  std::vector<const rpc::Variable*> out;
  for (const auto& a : h.captured.arguments)
    if (!(a.flags & kReturnArgument)) out.push_back(&a);
  return out;
}

std::string baseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string assignments(const std::vector<const rpc::Variable*>& vars, const char* sep) {
  std::string out;
  for (size_t i = 0; i < vars.size(); ++i) out += (i ? sep : "") + vars[i]->name + "=" + delve::valueText(*vars[i]);
  return out;
}

std::vector<const rpc::Variable*> pointers(const std::vector<rpc::Variable>& vars) {
  std::vector<const rpc::Variable*> out;
  for (const auto& v : vars) out.push_back(&v);
  return out;
}

boost::json::object namedValues(const std::vector<const rpc::Variable*>& vars) {
  boost::json::object o;
  for (const auto* v : vars) o[v->name] = delve::valueJson(*v);
  return o;
}

std::string frameFunction(const rpc::Stackframe& f) {
  return f.location.function ? f.location.function->name : "?";
}

std::string timeText(std::chrono::system_clock::time_point t, bool utc, const char* format) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  tm parts{};
  utc ? gmtime_r(&secs, &parts) : localtime_r(&secs, &parts);
  char buf[40];
  size_t n = strftime(buf, sizeof buf, format, &parts);
  std::snprintf(buf + n, sizeof buf - n, ".%03d%s", static_cast<int>(ms % 1000), utc ? "Z" : "");
  return buf;
}

}  // namespace

delve::BreakpointSpec captureSpec(const std::string& location, const CaptureParts& parts) {
  delve::BreakpointSpec spec;
  spec.location = location;
  spec.variables = parts.exprs;
  spec.args = parts.args;
  spec.locals = parts.locals;
  spec.stackDepth = parts.stack;
  return spec;
}

std::string clockText(std::chrono::system_clock::time_point t) { return timeText(t, false, "%H:%M:%S"); }
std::string isoTime(std::chrono::system_clock::time_point t) { return timeText(t, true, "%Y-%m-%dT%H:%M:%S"); }

std::string hitText(const delve::BreakpointHit& h, const CaptureParts& parts) {
  std::string out = "g" + std::to_string(h.goroutineId) + " " + h.function;
  if (parts.args) out += "(" + assignments(arguments(h), ", ") + ")";
  out += " " + baseName(h.file) + ":" + std::to_string(h.line);
  if (!parts.exprs.empty()) out += " | " + assignments(pointers(h.captured.variables), " ");
  if (parts.locals) out += " | locals: " + assignments(pointers(h.captured.locals), " ");
  if (parts.stack > 0) {
    out += " | stack:";
    const auto& frames = h.captured.stacktrace;
    for (size_t i = 0; i < frames.size() && i < static_cast<size_t>(parts.stack); ++i)
      out += std::string(i ? " <-" : "") + " " + frameFunction(frames[i]) + " " + baseName(frames[i].location.file) +
             ":" + std::to_string(frames[i].location.line);
  }
  return out;
}

boost::json::object hitJson(const delve::BreakpointHit& h, const CaptureParts& parts) {
  boost::json::object o{{"goroutine", h.goroutineId}, {"function", h.function}, {"file", h.file}, {"line", h.line}};
  if (!parts.exprs.empty()) o["values"] = namedValues(pointers(h.captured.variables));
  if (parts.args) o["args"] = namedValues(arguments(h));
  if (parts.locals) o["locals"] = namedValues(pointers(h.captured.locals));
  if (parts.stack > 0) {
    boost::json::array frames;
    for (size_t i = 0; i < h.captured.stacktrace.size() && i < static_cast<size_t>(parts.stack); ++i) {
      const auto& f = h.captured.stacktrace[i];
      frames.push_back(
          boost::json::object{{"function", frameFunction(f)}, {"file", f.location.file}, {"line", f.location.line}});
    }
    o["stack"] = std::move(frames);
  }
  return o;
}

std::optional<Error> captureError(const delve::BreakpointHit& h) {
  for (const auto& v : h.captured.variables) {
    if (v.unreadable.empty()) continue;
    Error e = rpc::delveError("Eval", v.unreadable);
    if (e.kind == ErrorKind::NoMatch || e.kind == ErrorKind::Usage) {
      e.message = v.name + ": " + e.message;
      return e;
    }
  }
  return std::nullopt;
}

std::optional<Error> syntaxError(delve::DelveSession& session, const std::vector<std::string>& exprs) {
  for (const auto& e : exprs) {
    auto v = session.eval(e, rpc::LoadConfig{false, 0, 0, 0, 0});
    if (!v && v.error().message.rfind("Delve cannot parse", 0) == 0) {
      Error err = v.error();
      err.message = e + ": " + err.message;
      return err;
    }
  }
  return std::nullopt;
}

const char* describe(HitLoopEnd e) {
  switch (e) {
    case HitLoopEnd::Count: return "hit count reached";
    case HitLoopEnd::Duration: return "duration reached";
    case HitLoopEnd::Signal: return "interrupted";
    case HitLoopEnd::Stopped: return "output closed";
  }
  return "";
}

HitLoopResult runHitLoop(delve::DelveSession& session, const std::vector<int64_t>& ids, long long maxHits,
                         double durationS, const std::function<bool(const delve::BreakpointHit&)>& onHit) {
  HitLoopResult r;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<long long>(durationS * 1000));
  for (;;) {
    if (stopRequested()) break;
    auto wait = durationS > 0 ? std::chrono::duration_cast<delve::Millis>(deadline - std::chrono::steady_clock::now())
                              : delve::Millis(24LL * 3600 * 1000);
    if (wait.count() <= 0) {
      r.end = HitLoopEnd::Duration;
      break;
    }
    auto ev = session.continueToBreakpoint(wait);
    if (!ev) {
      if (!stopRequested()) r.failed = ev.error();
      break;
    }
    if (ev->timedOut) {
      r.end = HitLoopEnd::Duration;
      break;
    }
    bool done = false;
    for (const auto& h : ev->hits) {  // none: Delve stopped for itself; continue again
      if (std::find(ids.begin(), ids.end(), h.breakpointId) == ids.end()) continue;
      if (r.hits == 0) r.failed = captureError(h);
      if (r.failed) break;
      ++r.hits;
      if (!onHit(h)) {
        r.end = HitLoopEnd::Stopped;
        done = true;
        break;
      }
      if (maxHits > 0 && r.hits >= maxHits) {
        r.end = HitLoopEnd::Count;
        done = true;
        break;
      }
    }
    if (done || r.failed) break;
  }
  r.activeS = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace goscope::cli
