#include "cli/mcp_tools.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace goscope::cli::mcp {

namespace json = boost::json;

namespace {

// --- schemas ----------------------------------------------------------------

json::object pidProperty() {
  return {{"type", "integer"}, {"minimum", 1}, {"description", "the running Go process (its PID)"}};
}
json::object stringList(const std::string& what, bool required) {
  json::object o{{"type", "array"}, {"items", {{"type", "string"}}}, {"description", what}};
  if (required) o["minItems"] = 1;
  return o;
}
json::object durationProperty(const Limits& l) {
  char text[200];
  std::snprintf(text, sizeof text, "seconds to probe (default %g, at most %g)", l.defaultDurationS, l.maxDurationS);
  return {{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", l.maxDurationS}, {"description", text}};
}
json::object tool(const std::string& name, const std::string& title, const std::string& description,
                  json::object properties, std::vector<std::string> required, bool readOnly, bool stops = false) {
  json::array req;
  for (auto& r : required) req.emplace_back(r);
  json::object schema{{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!req.empty()) schema["required"] = std::move(req);
  return {{"name", name},
          {"title", title},
          {"description", description},
          {"inputSchema", std::move(schema)},
          {"annotations",
           {{"title", title}, {"readOnlyHint", readOnly}, {"destructiveHint", !readOnly}, {"idempotentHint", readOnly && !stops},
            {"openWorldHint", false}}}};
}

std::string budgetText(const Limits& l) {
  char b[64];
  std::snprintf(b, sizeof b, "%g%%", l.budgetPct);
  return b;
}

// --- argument checks ----------------------------------------------------------

Failure bad(const std::string& toolName, const std::string& why) {
  return fail(ErrorKind::Usage, toolName + ": " + why);
}

// The arguments a tool takes; any other is an error, not ignored.
Result<void> onlyKnown(const std::string& t, const json::object& a, std::initializer_list<const char*> known) {
  for (const auto& kv : a) {
    bool ok = false;
    for (const char* k : known) ok = ok || kv.key() == k;
    if (!ok) return bad(t, "unknown argument '" + std::string(kv.key()) + "'");
  }
  return {};
}

Result<std::optional<int64_t>> integer(const std::string& t, const json::object& a, const char* key, int64_t min,
                                       int64_t max) {
  auto it = a.find(key);
  if (it == a.end() || it->value().is_null()) return std::optional<int64_t>();
  const json::value& v = it->value();
  int64_t n = 0;
  if (v.is_int64()) n = v.as_int64();
  else if (v.is_uint64() && v.as_uint64() <= static_cast<uint64_t>(INT64_MAX)) n = static_cast<int64_t>(v.as_uint64());
  else if (v.is_double() && std::floor(v.as_double()) == v.as_double() && std::fabs(v.as_double()) < 9e15)
    n = static_cast<int64_t>(v.as_double());
  else
    return bad(t, std::string(key) + " wants an integer");
  if (n < min || n > max)
    return bad(t, std::string(key) + " wants an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                      ", not " + std::to_string(n));
  return std::optional<int64_t>(n);
}

Result<std::optional<double>> number(const std::string& t, const json::object& a, const char* key, double max) {
  auto it = a.find(key);
  if (it == a.end() || it->value().is_null()) return std::optional<double>();
  const json::value& v = it->value();
  if (!v.is_number()) return bad(t, std::string(key) + " wants a number");
  const double d = v.to_number<double>();
  char b[160];
  std::snprintf(b, sizeof b, "%s wants a number above 0 and at most %g, not %g", key, max, d);
  if (!(d > 0) || d > max) return bad(t, b);
  return std::optional<double>(d);
}

Result<std::optional<std::string>> text(const std::string& t, const json::object& a, const char* key) {
  auto it = a.find(key);
  if (it == a.end() || it->value().is_null()) return std::optional<std::string>();
  if (!it->value().is_string() || it->value().as_string().empty()) return bad(t, std::string(key) + " wants a non-empty string");
  return std::optional<std::string>(std::string(it->value().as_string()));
}

Result<bool> flag(const std::string& t, const json::object& a, const char* key) {
  auto it = a.find(key);
  if (it == a.end() || it->value().is_null()) return false;
  if (!it->value().is_bool()) return bad(t, std::string(key) + " wants true or false");
  return it->value().as_bool();
}

Result<std::vector<std::string>> texts(const std::string& t, const json::object& a, const char* key, bool required) {
  std::vector<std::string> out;
  auto it = a.find(key);
  if (it == a.end() || it->value().is_null()) {
    if (required) return bad(t, std::string(key) + " is required");
    return out;
  }
  if (!it->value().is_array()) return bad(t, std::string(key) + " wants an array of strings");
  for (const auto& v : it->value().as_array()) {
    if (!v.is_string() || v.as_string().empty()) return bad(t, std::string(key) + " wants non-empty strings");
    out.emplace_back(v.as_string());
  }
  if (required && out.empty()) return bad(t, std::string(key) + " wants at least one");
  // A word starting with '-' would be taken as an option of the subcommand.
  for (const auto& s : out)
    if (s[0] == '-') return bad(t, std::string(key) + ": '" + s + "' starts with '-'");
  return out;
}

std::string secondsText(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// -p PID or -b BINARY: exactly one, for list and info.
Result<void> pidOrBinary(const std::string& t, const json::object& a, Command& c) {
  auto pid = integer(t, a, "pid", 1, 4194304);
  if (!pid) return pid.failure();
  auto bin = text(t, a, "binary");
  if (!bin) return bin.failure();
  if (pid->has_value() == bin->has_value()) return bad(t, "give either pid or binary");
  if (pid->has_value()) {
    c.pid = static_cast<pid_t>(**pid);
    c.args.insert(c.args.end(), {"-p", std::to_string(c.pid)});
  } else {
    if ((**bin)[0] == '-') return bad(t, "binary: '" + **bin + "' starts with '-'");
    c.binary = **bin;
    c.args.insert(c.args.end(), {"-b", c.binary});
  }
  return {};
}

Result<void> requiredPid(const std::string& t, const json::object& a, Command& c) {
  auto pid = integer(t, a, "pid", 1, 4194304);
  if (!pid) return pid.failure();
  if (!pid->has_value()) return bad(t, "pid is required");
  c.pid = static_cast<pid_t>(**pid);
  c.args.insert(c.args.end(), {"-p", std::to_string(c.pid)});
  return {};
}

// The options every probing call carries: the server's budget, enforced,
// and --no-stop unless the server allows stops.
void probingOptions(Command& c, const Limits& l, double seconds) {
  c.args.insert(c.args.end(), {"-d", secondsText(seconds), "--max-overhead", secondsText(l.budgetPct)});
  if (!l.allowStop) c.args.push_back("--no-stop");
  c.probeSeconds = seconds;
}

Result<double> duration(const std::string& t, const json::object& a, const Limits& l) {
  auto d = number(t, a, "duration_s", l.maxDurationS);
  if (!d) return d.failure();
  return d->value_or(std::min(l.defaultDurationS, l.maxDurationS));
}

// A trace spec's function: 'main.add(x int) int' -> main.add. A method's
// receiver, 'main.(*T).M', opens its parenthesis after a '.'; a signature's
// after the name. A /regex/ is the pattern as it is.
std::string functionOfSpec(const std::string& spec) {
  if (spec.front() == '/') return spec;
  for (size_t i = 1; i < spec.size(); i++)
    if (spec[i] == '(' && spec[i - 1] != '.') return spec.substr(0, i);
  return spec;
}

#define TRY(expr)                    \
  do {                               \
    auto r_ = (expr);                \
    if (!r_) return r_.failure();      \
  } while (0)

}  // namespace

boost::json::array toolList(const Limits& l) {
  json::array tools;
  const std::string budget = " Runs under the server's overhead budget (" + budgetText(l) +
                             " of the target's time, enforced: a hotter probe is sampled or dropped, and the result says so).";
  const std::string never = l.allowStop ? "" : " Never stops the program.";
  tools.push_back(tool("list", "List functions",
                       "Functions of a Go program (a running process or a binary on disk) matching glob or /regex/ "
                       "patterns, with their signatures and where a probe would sit. Reads the file only.",
                       {{"pid", pidProperty()},
                        {"binary", {{"type", "string"}, {"description", "a Go executable on disk"}}},
                        {"patterns", stringList("globs (* and ?) or /regex/; none lists every function", false)},
                        {"max_results", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100000}, {"description", "rows returned (default 200); the rest are counted"}}}},
                       {}, true));
  tools.push_back(tool("info", "Describe a Go program",
                       "What goscope knows about a Go program: Go version, DWARF, symbols, goroutine id offset, "
                       "build info. Reads the file only.",
                       {{"pid", pidProperty()},
                        {"binary", {{"type", "string"}, {"description", "a Go executable on disk"}}},
                        {"arguments", {{"type", "boolean"}, {"description", "also count where each function's argument types come from (slower)"}}}},
                       {}, true));
  tools.push_back(tool("count", "Count calls",
                       "Counts calls of the matching functions in the kernel (uprobes + BPF) for a duration; returns "
                       "the count per function." + budget + never,
                       {{"pid", pidProperty()},
                        {"patterns", stringList("function patterns: main.handle, 'main.*', '/Handle$/'", true)},
                        {"duration_s", durationProperty(l)},
                        {"filter", {{"type", "string"}, {"description", "count only calls whose arguments pass this expression, tested in the kernel: 'n > 40'"}}},
                        {"top", {{"type", "integer"}, {"minimum", 1}, {"description", "only the N most called functions"}}}},
                       {"pid", "patterns"}, true));
  tools.push_back(tool("latency", "Latency per goroutine",
                       "Per-goroutine latency of the matching functions for a duration: a histogram and percentiles "
                       "per function." + budget + never,
                       {{"pid", pidProperty()},
                        {"patterns", stringList("function patterns", true)},
                        {"duration_s", durationProperty(l)}},
                       {"pid", "patterns"}, true));
  char eventsText[160];
  std::snprintf(eventsText, sizeof eventsText, "stop after this many calls (default %lld, at most %lld)",
                static_cast<long long>(std::min<int64_t>(100, l.maxEvents)), static_cast<long long>(l.maxEvents));
  tools.push_back(tool("trace", "Trace calls",
                       "One record per call of the matching functions, with arguments and results (typed from DWARF, "
                       "from the binary's own type data, or from a signature given: 'main.add(x int, y int) int'), "
                       "until max_events calls or the duration." + budget + never,
                       {{"pid", pidProperty()},
                        {"specs", stringList("function patterns or signatures", true)},
                        {"max_events", {{"type", "integer"}, {"minimum", 1}, {"maximum", l.maxEvents}, {"description", eventsText}}},
                        {"duration_s", durationProperty(l)},
                        {"filter", {{"type", "string"}, {"description", "only calls whose arguments pass this expression, tested in the kernel"}}},
                        {"stack", {{"type", "boolean"}, {"description", "each call's user stack, symbolized"}}},
                        {"max_string", {{"type", "integer"}, {"minimum", 1}, {"maximum", 256}, {"description", "bytes of each string (default 64)"}}}},
                       {"pid", "specs"}, true));
  tools.push_back(tool("read", "Read variables",
                       std::string("Reads package variables (main.counter, main.cfg) of a running Go program once, from "
                                   "its memory, typed by its DWARF.") +
                           (l.allowStop ? " Expressions that are not plain package variables are evaluated by Delve, "
                                          "which stops the program while it reads."
                                        : " Zero-pause: never stops the program; what only a debugger could evaluate "
                                          "is refused with the reason."),
                       {{"pid", pidProperty()}, {"expressions", stringList("package-qualified variables: main.counter", true)}},
                       {"pid", "expressions"}, true));
  tools.push_back(tool("overhead_estimate", "Estimate a probe's cost",
                       "What probing the matching functions would cost the target, before any probe is placed: where "
                       "each probe would sit, what one hit costs on this host (measured), and with calls_per_second, "
                       "the share of one CPU against the server's budget (" + budgetText(l) + ").",
                       {{"pid", pidProperty()},
                        {"patterns", stringList("function patterns", true)},
                        {"calls_per_second", {{"type", "number"}, {"exclusiveMinimum", 0}, {"description", "the calls per second you expect of each function (count measures them)"}}},
                        {"mode", {{"type", "string"}, {"enum", {"count", "latency", "trace"}}, {"description", "what the probe would do (default count; latency and trace also probe each RET)"}}}},
                       {"pid", "patterns"}, true));
  if (l.allowStop)
    tools.push_back(tool("break", "Breakpoint (stops the program)",
                         "Captures arguments (and expressions) at each hit of a function, up to max_hits. Served by BPF "
                         "when it can; by a Delve breakpoint otherwise, which STOPS THE WHOLE PROGRAM at every hit "
                         "(offered because the server was started with --allow-stop)." + budget,
                         {{"pid", pidProperty()},
                          {"function", {{"type", "string"}, {"description", "the function: main.handle"}}},
                          {"expressions", stringList("expressions to evaluate at each hit", false)},
                          {"max_hits", {{"type", "integer"}, {"minimum", 1}, {"maximum", l.maxEvents}}},
                          {"duration_s", durationProperty(l)}},
                         {"pid", "function"}, true, true));
  if (l.allowWrite)
    tools.push_back(tool("set", "Write variables (stops the program)",
                         "Writes package variables of a running Go program through Delve, which stops the program "
                         "while it writes (offered because the server was started with --allow-write).",
                         {{"pid", pidProperty()}, {"assignments", stringList("VAR=VALUE: main.limit=10", true)}},
                         {"pid", "assignments"}, false, true));
  return tools;
}

Result<Command> commandFor(const std::string& t, const json::object& a, const Limits& l) {
  Command c;
  if (t == "list") {
    TRY(onlyKnown(t, a, {"pid", "binary", "patterns", "max_results"}));
    c.args = {"list", "--json"};
    TRY(pidOrBinary(t, a, c));
    auto pats = texts(t, a, "patterns", false);
    if (!pats) return pats.failure();
    auto max = integer(t, a, "max_results", 1, 100000);
    if (!max) return max.failure();
    c.maxRecords = max->value_or(200);
    c.args.insert(c.args.end(), pats->begin(), pats->end());
    return c;
  }
  if (t == "info") {
    TRY(onlyKnown(t, a, {"pid", "binary", "arguments"}));
    c.args = {"info", "--json"};
    TRY(pidOrBinary(t, a, c));
    auto args = flag(t, a, "arguments");
    if (!args) return args.failure();
    if (*args) c.args.push_back("--arguments");
    return c;
  }
  if (t == "count" || t == "latency") {
    if (t == "count") TRY(onlyKnown(t, a, {"pid", "patterns", "duration_s", "filter", "top"}));
    else TRY(onlyKnown(t, a, {"pid", "patterns", "duration_s"}));
    c.args = {t, "--json"};
    TRY(requiredPid(t, a, c));
    auto pats = texts(t, a, "patterns", true);
    if (!pats) return pats.failure();
    auto d = duration(t, a, l);
    if (!d) return d.failure();
    probingOptions(c, l, *d);
    if (t == "count") {
      auto f = text(t, a, "filter");
      if (!f) return f.failure();
      if (*f) c.args.insert(c.args.end(), {"--filter", **f});
      auto top = integer(t, a, "top", 1, 1000000);
      if (!top) return top.failure();
      if (*top) c.args.insert(c.args.end(), {"--top", std::to_string(**top)});
    }
    c.listArgs = {"list", "--json", "-p", std::to_string(c.pid)};
    c.listArgs.insert(c.listArgs.end(), pats->begin(), pats->end());
    c.args.insert(c.args.end(), pats->begin(), pats->end());
    return c;
  }
  if (t == "trace") {
    TRY(onlyKnown(t, a, {"pid", "specs", "max_events", "duration_s", "filter", "stack", "max_string"}));
    c.args = {"trace", "--json"};
    TRY(requiredPid(t, a, c));
    auto specs = texts(t, a, "specs", true);
    if (!specs) return specs.failure();
    auto n = integer(t, a, "max_events", 1, l.maxEvents);
    if (!n) return n.failure();
    auto d = duration(t, a, l);
    if (!d) return d.failure();
    probingOptions(c, l, *d);
    c.args.insert(c.args.end(), {"-n", std::to_string(n->value_or(std::min<int64_t>(100, l.maxEvents)))});
    auto f = text(t, a, "filter");
    if (!f) return f.failure();
    if (*f) c.args.insert(c.args.end(), {"--filter", **f});
    auto stack = flag(t, a, "stack");
    if (!stack) return stack.failure();
    if (*stack) c.args.push_back("--stack");
    auto ms = integer(t, a, "max_string", 1, 256);
    if (!ms) return ms.failure();
    if (*ms) c.args.insert(c.args.end(), {"--max-string", std::to_string(**ms)});
    c.listArgs = {"list", "--json", "-p", std::to_string(c.pid)};
    for (const auto& s : *specs) c.listArgs.push_back(functionOfSpec(s));
    c.args.insert(c.args.end(), specs->begin(), specs->end());
    return c;
  }
  if (t == "read") {
    TRY(onlyKnown(t, a, {"pid", "expressions"}));
    c.args = {"read", "--json"};
    TRY(requiredPid(t, a, c));
    auto exprs = texts(t, a, "expressions", true);
    if (!exprs) return exprs.failure();
    if (!l.allowStop) c.args.push_back("--no-stop");
    c.args.insert(c.args.end(), exprs->begin(), exprs->end());
    return c;
  }
  if (t == "overhead_estimate") {
    TRY(onlyKnown(t, a, {"pid", "patterns", "calls_per_second", "mode"}));
    c.args = {"list", "--json"};
    TRY(requiredPid(t, a, c));
    auto pats = texts(t, a, "patterns", true);
    if (!pats) return pats.failure();
    auto rate = number(t, a, "calls_per_second", 1e10);
    if (!rate) return rate.failure();
    c.estimateRate = *rate;
    auto mode = text(t, a, "mode");
    if (!mode) return mode.failure();
    if (*mode && **mode != "count" && **mode != "latency" && **mode != "trace")
      return bad(t, "mode wants count, latency or trace, not '" + **mode + "'");
    c.estimate = true;
    c.estimateLatency = *mode && **mode != "count";
    c.args.insert(c.args.end(), pats->begin(), pats->end());
    return c;
  }
  if (t == "break") {
    if (!l.allowStop)
      return fail(ErrorKind::Permission, "break: a breakpoint may stop the program, and this server was started without --allow-stop");
    TRY(onlyKnown(t, a, {"pid", "function", "expressions", "max_hits", "duration_s"}));
    c.args = {"break", "--json", "--args"};
    TRY(requiredPid(t, a, c));
    auto fn = text(t, a, "function");
    if (!fn) return fn.failure();
    if (!*fn) return bad(t, "function is required");
    if ((**fn)[0] == '-') return bad(t, "function: '" + **fn + "' starts with '-'");
    auto exprs = texts(t, a, "expressions", false);
    if (!exprs) return exprs.failure();
    auto n = integer(t, a, "max_hits", 1, l.maxEvents);
    if (!n) return n.failure();
    auto d = duration(t, a, l);
    if (!d) return d.failure();
    probingOptions(c, l, *d);
    c.args.insert(c.args.end(), {"-n", std::to_string(n->value_or(std::min<int64_t>(10, l.maxEvents)))});
    c.listArgs = {"list", "--json", "-p", std::to_string(c.pid), **fn};
    c.args.push_back(**fn);
    c.args.insert(c.args.end(), exprs->begin(), exprs->end());
    return c;
  }
  if (t == "set") {
    if (!l.allowWrite)
      return fail(ErrorKind::Permission, "set: writing to the program needs a server started with --allow-write");
    TRY(onlyKnown(t, a, {"pid", "assignments"}));
    c.args = {"set", "--json", "--allow-write"};
    TRY(requiredPid(t, a, c));
    auto as = texts(t, a, "assignments", true);
    if (!as) return as.failure();
    c.args.insert(c.args.end(), as->begin(), as->end());
    return c;
  }
  return fail(ErrorKind::NotFound, "no tool named '" + t + "'", "tools/list names them");
}

std::string refusalByAllowLists(const Limits& l, pid_t pid, const std::string& exe) {
  if (pid > 0 && !l.pids.empty() && std::find(l.pids.begin(), l.pids.end(), pid) == l.pids.end())
    return "PID " + std::to_string(pid) + " is not one this server was started for (--pid)";
  if (!l.binaries.empty() && std::find(l.binaries.begin(), l.binaries.end(), exe) == l.binaries.end())
    return (pid > 0 ? "PID " + std::to_string(pid) + " runs " : std::string()) + (exe.empty() ? "an unknown file" : exe) +
           ", not a binary this server was started for (--binary)";
  if (pid <= 0 && !l.pids.empty() && l.binaries.empty())
    return "this server was started for PIDs only (--pid): a file is read only with --binary naming it";
  return {};
}

const std::vector<std::string>& protocolVersions() {
  static const std::vector<std::string> v = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return v;
}

std::string negotiatedVersion(const std::string& requested) {
  const auto& v = protocolVersions();
  return std::find(v.begin(), v.end(), requested) != v.end() ? requested : v.front();
}

}  // namespace goscope::cli::mcp
