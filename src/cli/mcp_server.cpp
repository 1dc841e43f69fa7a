#include "cli/mcp_server.hpp"

#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "api/goscope.hpp"
#include "cli/goscope_child.hpp"
#include "output/stdout_writer.hpp"
#include "util/log.hpp"

namespace goscope::cli::mcp {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct Server::Call {
  json::value id;
  std::string name;
  json::object arguments;
  std::optional<json::value> progressToken;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> done{false};
  std::mutex mu;
  pid_t child = 0;  // the subcommand running now, under mu
  std::thread thread;

  void interrupt() {
    cancelled = true;
    std::lock_guard<std::mutex> g(mu);
    if (child > 0) ::kill(child, SIGINT);
  }
};

namespace {

// JSON-RPC's codes (the MCP specification uses these).
constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602;

std::string commandText(const std::vector<std::string>& args) {
  std::string s = "goscope";
  for (const auto& a : args) {
    const bool plain = a.find_first_of(" '\"*?()$\\|&;<>") == std::string::npos;
    s += plain ? " " + a : " '" + a + "'";
  }
  return s;
}

std::string exeOf(pid_t pid) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string s(buf, static_cast<size_t>(n));
  const std::string deleted = " (deleted)";
  if (s.size() > deleted.size() && s.compare(s.size() - deleted.size(), deleted.size(), deleted) == 0)
    s.resize(s.size() - deleted.size());
  return s;
}

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// What one subcommand printed.
struct Ran {
  int exitCode = -1;
  json::array records;     // its JSON lines (kept up to the limits)
  std::vector<std::string> messages;  // its stderr lines
  size_t recordBytes = 0;
  int64_t recordsSeen = 0;  // all rows, kept or not (list)
  bool truncated = false;   // the output limit cut it short
  bool timedOut = false;
};

// The CLI's own one-line error (the last "goscope: ..." line), for an
// isError result.
std::string errorLine(const Ran& r) {
  for (auto it = r.messages.rbegin(); it != r.messages.rend(); ++it)
    if (it->rfind("goscope: ", 0) == 0) return it->substr(9);
  return r.messages.empty() ? "exited with code " + std::to_string(r.exitCode) : r.messages.back();
}

}  // namespace

Server::Server(Limits limits, size_t maxCalls) : limits_(std::move(limits)), maxCalls_(maxCalls) {
  for (auto& b : limits_.binaries) b = realPath(b);
}

Server::~Server() {
  std::lock_guard<std::mutex> g(callsMu_);
  for (auto& c : calls_) {
    c->interrupt();
    if (c->thread.joinable()) c->thread.join();
  }
}

void Server::send(const json::object& message) {
  const std::string line = json::serialize(message) + "\n";
  std::lock_guard<std::mutex> g(sendMu_);
  auto& w = output::StdoutWriter::instance();
  w.write(line.data(), line.size());
  w.flush();
}

void Server::reply(const json::value& id, json::value result) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::replyError(const json::value& id, int code, const std::string& message) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Server::run(const volatile std::sig_atomic_t& stop) {
  std::string pending;
  char buf[65536];
  while (!stop && !output::StdoutWriter::instance().closed()) {
    pollfd p{0, POLLIN, 0};
    const int n = ::poll(&p, 1, 200);
    reapFinished();
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(0, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;  // the client closed stdin: the session is over
    pending.append(buf, static_cast<size_t>(got));
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string line = pending.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      boost::system::error_code ec;
      json::value message = json::parse(line, ec);
      if (ec) {
        replyError(nullptr, kParseError, "not JSON: " + ec.message());
        continue;
      }
      handle(message);
    }
    pending.erase(0, start);
    if (pending.size() > (64u << 20)) {
      replyError(nullptr, kParseError, "a message longer than 64 MiB");
      pending.clear();
    }
  }
  std::vector<std::shared_ptr<Call>> calls;
  {
    std::lock_guard<std::mutex> g(callsMu_);
    calls.swap(calls_);
  }
  for (auto& c : calls) c->interrupt();
  for (auto& c : calls)
    if (c->thread.joinable()) c->thread.join();
}

void Server::reapFinished() {
  std::lock_guard<std::mutex> g(callsMu_);
  for (auto it = calls_.begin(); it != calls_.end();) {
    if ((*it)->done) {
      if ((*it)->thread.joinable()) (*it)->thread.join();
      it = calls_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::handle(const json::value& message) {
  if (!message.is_object()) {
    replyError(nullptr, kInvalidRequest, message.is_array() ? "batches are not supported" : "a request is a JSON object");
    return;
  }
  const json::object& m = message.as_object();
  const json::value* id = m.if_contains("id");
  const json::value* method = m.if_contains("method");
  if (!method || !method->is_string()) {
    if (id && (m.contains("result") || m.contains("error"))) return;  // a response to nothing we asked
    replyError(id ? *id : json::value(nullptr), kInvalidRequest, "no method");
    return;
  }
  const std::string name(method->as_string());
  static const json::object kEmpty;
  const json::value* paramsValue = m.if_contains("params");
  const json::object& params = paramsValue && paramsValue->is_object() ? paramsValue->as_object() : kEmpty;
  if (!id) {  // a notification: never answered
    if (name == "notifications/cancelled") {
      const json::value* rid = params.if_contains("requestId");
      if (!rid) return;
      std::lock_guard<std::mutex> g(callsMu_);
      for (auto& c : calls_)
        if (c->id == *rid) c->interrupt();
    }
    return;
  }
  if (name == "initialize") {
    const json::value* v = params.if_contains("protocolVersion");
    const std::string requested = v && v->is_string() ? std::string(v->as_string()) : "";
    reply(*id, json::object{
                   {"protocolVersion", negotiatedVersion(requested)},
                   {"capabilities", {{"tools", {{"listChanged", false}}}}},
                   {"serverInfo", {{"name", "goscope"}, {"title", "goscope"}, {"version", GOSCOPE_VERSION}}},
                   {"instructions",
                    "goscope observes a running Go program without stopping it: list and info read its file; count, "
                    "latency and trace probe it in the kernel under an overhead budget this server enforces; read "
                    "reads package variables from its memory. Start with list to find function names."}});
    return;
  }
  if (name == "ping") {
    reply(*id, json::object{});
    return;
  }
  if (name == "tools/list") {
    reply(*id, json::object{{"tools", toolList(limits_)}});
    return;
  }
  if (name == "tools/call") {
    startCall(*id, params);
    return;
  }
  replyError(*id, kMethodNotFound, "no method '" + name + "' (this server offers tools only)");
}

void Server::startCall(const json::value& id, const json::object& params) {
  const json::value* name = params.if_contains("name");
  if (!name || !name->is_string()) {
    replyError(id, kInvalidParams, "tools/call needs a tool name");
    return;
  }
  const json::value* args = params.if_contains("arguments");
  if (args && !args->is_object() && !args->is_null()) {
    replyError(id, kInvalidParams, "arguments is an object");
    return;
  }
  // An unknown tool is a protocol error; a known one's bad arguments are
  // the tool's (isError), which the agent reads and can correct. break and
  // set, not offered without --allow-stop or --allow-write, are refused as
  // tools, saying which flag offers them.
  const std::string tool(name->as_string());
  bool known = tool == "break" || tool == "set";
  for (const auto& t : toolList(limits_)) known = known || t.as_object().at("name").as_string() == tool;
  if (!known) {
    replyError(id, kInvalidParams, "no tool named '" + tool + "' (tools/list names them)");
    return;
  }
  auto call = std::make_shared<Call>();
  call->id = id;
  call->name = tool;
  if (args && args->is_object()) call->arguments = args->as_object();
  if (const json::value* meta = params.if_contains("_meta"); meta && meta->is_object())
    if (const json::value* token = meta->as_object().if_contains("progressToken")) call->progressToken = *token;
  std::lock_guard<std::mutex> g(callsMu_);
  if (calls_.size() >= maxCalls_) {
    reply(id, json::object{{"content", json::array{json::object{
                                           {"type", "text"},
                                           {"text", std::to_string(calls_.size()) +
                                                        " calls are running, the most this server runs at once "
                                                        "(--max-calls): wait for one to end"}}}},
                           {"isError", true}});
    return;
  }
  calls_.push_back(call);
  call->thread = std::thread([this, call] {
    try {
      runCall(call);
    } catch (const std::exception& e) {
      if (!call->cancelled)
        reply(call->id, json::object{{"content", json::array{json::object{{"type", "text"}, {"text", std::string("internal error: ") + e.what()}}}},
                                     {"isError", true}});
    }
    call->done = true;
  });
}

namespace {

json::object toolError(const std::string& text) {
  return {{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}, {"isError", true}};
}

// Runs one subcommand to its end: records kept within the limits, progress
// while it probes, the watchdog past its duration, cancellation.
template <typename Progress>
Ran runSubcommand(Server::Call& call, const std::vector<std::string>& args, const Limits& l, int64_t maxRecords,
                  double probeSeconds, Progress progress) {
  Ran r;
  auto child = GoscopeChild::start(args);
  if (!child) {
    r.messages.push_back("goscope: " + child.error().message);
    return r;
  }
  {
    std::lock_guard<std::mutex> g(call.mu);
    call.child = child->pid();
  }
  if (call.cancelled) child->interrupt();
  // Start-up (the analysis, the attach) plus the duration plus the detach;
  // beyond that the subcommand is interrupted, then killed.
  const double limitS = probeSeconds + 120;
  const auto t0 = Clock::now();
  auto lastProgress = t0;
  bool interrupted = false, killed = false;
  std::vector<std::string> out, err;
  for (bool open = true; open;) {
    open = child->pump(std::chrono::milliseconds(200), out, err);
    for (auto& line : out) {
      r.recordsSeen++;
      if (r.truncated || (maxRecords > 0 && static_cast<int64_t>(r.records.size()) >= maxRecords)) continue;
      if (r.recordBytes + line.size() > l.maxOutputBytes) {
        r.truncated = true;
        if (!interrupted) child->interrupt();
        interrupted = true;
        continue;
      }
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      r.recordBytes += line.size();
      r.records.push_back(ec ? json::value(json::string(line)) : std::move(v));
    }
    out.clear();
    for (auto& line : err) r.messages.push_back(std::move(line));
    err.clear();
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (now - lastProgress >= std::chrono::seconds(1)) {
      lastProgress = now;
      progress(elapsed);
    }
    if (call.cancelled && !interrupted) {
      child->interrupt();
      interrupted = true;
    }
    if (!killed && elapsed > limitS + 10) {
      child->kill();
      killed = true;
    } else if (!interrupted && elapsed > limitS) {
      r.timedOut = true;
      child->interrupt();
      interrupted = true;
    }
  }
  r.exitCode = child->wait();
  std::lock_guard<std::mutex> g(call.mu);
  call.child = 0;
  return r;
}

// The functions a list printed that a probe would sit on.
int64_t probedRows(const Ran& r) {
  int64_t n = 0;
  for (const auto& v : r.records)
    if (v.is_object() && v.as_object().contains("probe") && !v.as_object().at("probe").is_null()) n++;
  return n;
}

std::string percent(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g%%", v);
  return b;
}

// overhead_estimate: the list's rows priced by this host's figures.
json::object estimate(const Command& c, const Ran& listed, const Limits& l, std::string& text) {
  const HostCosts costs = api::hostCosts();
  json::array rows;
  double total = 0;
  bool priced = true;
  for (const auto& v : listed.records) {
    if (!v.is_object()) continue;
    const auto& o = v.as_object();
    const json::value* kind = o.if_contains("probe_kind");
    const std::string k = kind && kind->is_string() ? std::string(kind->as_string()) : "none";
    json::object row{{"func", o.contains("func") ? o.at("func") : json::value(nullptr)}, {"probe_kind", k}};
    const auto placement = placementOfProbeKind(k);
    std::string line = row["func"].is_string() ? std::string(row["func"].as_string()) : "?";
    if (!placement) {
      row["per_hit_ns"] = nullptr;
      line += ": " + k + " (not priced)";
      priced = false;
    } else {
      double ns = costs.perHitNs(*placement);
      if (c.estimateLatency) ns += costs.returnNs;  // each call's RET, priced as single-stepped (an upper bound)
      row["per_hit_ns"] = std::llround(ns);
      line += ": " + k + ", ~" + describeNs(ns) + " a call";
      if (c.estimateRate) {
        const double share = *c.estimateRate * ns / 1e7;
        row["share_pct"] = share;
        total += share;
        line += "; at " + std::to_string(std::llround(*c.estimateRate)) + " calls/s, " + percent(share) + " of one CPU";
      }
    }
    rows.push_back(std::move(row));
    text += line + "\n";
  }
  json::object s{{"functions", std::move(rows)}, {"figures", costs.source}, {"budget_pct", l.budgetPct}};
  if (c.estimateRate) {
    s["calls_per_second"] = *c.estimateRate;
    s["share_pct"] = total;
    s["within_budget"] = priced && total <= l.budgetPct;
    text += "in all " + percent(total) + " of one CPU at " + std::to_string(std::llround(*c.estimateRate)) +
            " calls/s per function, budget " + percent(l.budgetPct) +
            (total <= l.budgetPct ? ": within it" : ": over it (a count would sample or drop the hottest probes)") + "\n";
  } else {
    text += "give calls_per_second for the share of a CPU (count measures the rate, under the budget)\n";
  }
  text += "figures: " + costs.source + "\n";
  return s;
}

}  // namespace

void Server::runCall(const std::shared_ptr<Call>& call) {
  auto command = commandFor(call->name, call->arguments, limits_);
  if (!command) {
    reply(call->id, toolError(command.error().message + (command.error().hint.empty() ? "" : " (" + command.error().hint + ")")));
    return;
  }
  Command& c = *command;
  const std::string refusal = c.pid > 0 ? refusalByAllowLists(limits_, c.pid, exeOf(c.pid))
                                        : refusalByAllowLists(limits_, 0, realPath(c.binary));
  if (!refusal.empty()) {
    reply(call->id, toolError(call->name + ": " + refusal));
    return;
  }
  double progressSoFar = 0;
  auto progress = [&](double elapsed) {
    if (!call->progressToken || call->cancelled) return;
    progressSoFar = std::max(progressSoFar + 0.001, std::floor(elapsed * 10) / 10);
    json::object p{{"progressToken", *call->progressToken}, {"progress", progressSoFar}};
    if (c.probeSeconds > 0) p["total"] = c.probeSeconds;
    p["message"] = call->name + ": " + std::to_string(std::lround(elapsed)) + " s";
    send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", std::move(p)}});
  };
  if (!c.listArgs.empty() && !call->cancelled) {
    Ran listed = runSubcommand(*call, c.listArgs, limits_, 0, 0, progress);
    const int64_t n = probedRows(listed);
    if (listed.exitCode == 0 && n > limits_.maxProbes) {
      reply(call->id, toolError(call->name + ": the patterns match " + std::to_string(n) +
                                " functions, more than this server probes in one call (--max-probes " +
                                std::to_string(limits_.maxProbes) + "): narrow them"));
      return;
    }
  }
  Ran r = runSubcommand(*call, c.args, limits_, c.maxRecords, c.probeSeconds, progress);
  if (call->cancelled) return;  // the client said it no longer wants an answer

  json::object s{{"tool", call->name}, {"command", commandText(c.args)}, {"exit_code", r.exitCode}};
  std::string text;
  for (const auto& m : r.messages) text += m + "\n";
  if (r.exitCode != 0) {
    s["error"] = errorLine(r);
    json::array msgs;
    for (const auto& m : r.messages) msgs.emplace_back(m);
    s["messages"] = std::move(msgs);
    // The CLI's messages name their subcommand already ("read: ..."); a
    // failure of another kind (a bad target) is prefixed with the tool.
    const std::string line = errorLine(r);
    const std::string said = line.rfind(c.args.front() + ":", 0) == 0 ? line : call->name + ": " + line;
    json::object result = toolError(said + (r.timedOut ? " (interrupted: it ran past its time)" : ""));
    result["structuredContent"] = std::move(s);
    reply(call->id, std::move(result));
    return;
  }
  if (c.estimate) {
    text.clear();
    json::object e = estimate(c, r, limits_, text);
    for (auto& kv : e) s[kv.key()] = kv.value();
  } else {
    // The budget's actions, said apart: what a hot probe had done to it.
    json::array actions;
    for (const auto& v : r.records)
      if (v.is_object() && v.as_object().contains("overhead_bound")) actions.push_back(v.as_object().at("overhead_bound"));
    if (!actions.empty()) s["budget_actions"] = std::move(actions);
    if (c.maxRecords > 0 && r.recordsSeen > static_cast<int64_t>(r.records.size())) {
      s["more"] = r.recordsSeen - static_cast<int64_t>(r.records.size());
      text += std::to_string(r.recordsSeen - static_cast<int64_t>(r.records.size())) +
              " more not returned (max_results)\n";
    }
    if (r.truncated) {
      text += "output cut at " + std::to_string(limits_.maxOutputBytes) + " bytes (--max-output); the call was ended there\n";
    }
    for (const auto& v : r.records) text += json::serialize(v) + "\n";
    s["records"] = r.records;
  }
  s["truncated"] = r.truncated;
  json::array msgs;
  for (const auto& m : r.messages) msgs.emplace_back(m);
  s["messages"] = std::move(msgs);
  reply(call->id, json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
                               {"structuredContent", std::move(s)},
                               {"isError", false}});
}

}  // namespace goscope::cli::mcp
