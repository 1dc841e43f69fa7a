// One JSON object per line for programs. Keys are part of goscope's
// contract: they are only ever added to.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "output/call_parts.hpp"
#include "output/clock_text.hpp"
#include "output/outputs.hpp"
#include "output/stdout_lines.hpp"
#include "output/wall_time.hpp"
#include "util/hex.hpp"
#include "util/json_text.hpp"
#include "value/render.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::output {

namespace {

// {"goroutine","function","file","line", and "values","args","locals","stack" when asked}
void hitFields(boost::json::object& o, const api::Call& c, const HitShape& shape) {
  o["goroutine"] = c.goid;
  o["function"] = c.function;
  o["file"] = c.file;
  o["line"] = c.line;
  if (shape.exprs) o["values"] = namedJson(c.exprs);
  if (shape.args)
    o["args"] = c.argRegisters     ? boost::json::value(registersJson(*c.argRegisters))
                : c.argsPositional ? boost::json::value(positionalJson(c.args, c.argsMore))
                                   : boost::json::value(namedJson(c.args));
  if (shape.locals) o["locals"] = namedJson(c.locals);
  if (!c.argsUnavailable.empty()) o["args_unavailable"] = c.argsUnavailable;
  if (c.inlinedInto) o["inlined_into"] = *c.inlinedInto;
  if (shape.stack > 0) {
    boost::json::array frames;
    for (size_t i = 0; i < c.stack.size() && i < static_cast<size_t>(shape.stack); ++i) {
      const auto& f = c.stack[i];
      frames.push_back(boost::json::object{{"function", f.function}, {"file", f.file}, {"line", f.line}});
    }
    o["stack"] = std::move(frames);
    // Frames beyond those shown: not recorded, or beyond --stack N (the
    // BPF path records them all; Delve is asked for one more than N).
    o["stack_cut"] = c.stackCut || c.stack.size() > static_cast<size_t>(shape.stack);
  }
}

// An interval read late: "late_ms", of which "late_own_ms" was goscope's
// own work (the rest: it was not run on time), and "intervals" when it
// covers more than one.
void addLate(boost::json::object& o, const Output::Interval& in) {
  if (in.lateS <= 0 && in.skipped == 0) return;
  o["late_ms"] = std::llround(in.lateS * 1000);
  o["late_own_ms"] = std::llround(in.ownS * 1000);
  if (in.skipped > 0) o["intervals"] = in.skipped + 1;
}

// {"omitted":K,...}: functions called but left out by --top, in an interval
// (with its elapsed_ms) or in the totals ("final":true).
void printOmitted(size_t omitted, std::optional<double> elapsedS, bool final) {
  boost::json::object o{{"omitted", omitted}};
  if (elapsedS) o["elapsed_ms"] = std::llround(*elapsedS * 1000);
  if (final) o["final"] = true;
  std::cout << jsonText(o) << '\n';
}

// ,"result_names":["q","r"]: the results' names, in the order of
// "results", where the text line names them (`= q=3, r=2`): when any result
// is named; an unnamed one (`~r0`, shown bare) is null.
void appendResultNames(const std::vector<Value>& results, std::string& out) {
  auto named = [](const Value& v) { return !v.name.starts_with("~r"); };
  if (std::none_of(results.begin(), results.end(), named)) return;
  out += ",\"result_names\":[";
  for (size_t i = 0; i < results.size(); i++) {
    if (i) out += ',';
    if (named(results[i])) appendJsonString(results[i].name, out);
    else out += "null";
  }
  out += ']';
}

class JsonOutput final : public Output {
 public:
  // {"func","pid","goid","ts_ns","args","results",["result_names"],
  // "duration_ns", ["args_unavailable"], ["inlined_into","file","line"],
  // "time", ["stack","stack_cut"]}: written straight into the line buffer,
  // the same bytes jsonText of the Boost object gave (tests compare them).
  void traceCall(const api::Call& c, bool stack) override {
    std::string& out = lines_.buffer();
    out += "{\"func\":";
    appendJsonString(c.function, out);
    out += ",\"pid\":";
    appendDecimal(c.pid, out);
    out += ",\"goid\":";
    appendDecimal(c.goid, out);
    out += ",\"ts_ns\":";
    appendDecimal(c.tsNs, out);
    out += ",\"args\":";
    if (!c.argsUnavailable.empty()) out += "null";
    else if (c.argRegisters) out += jsonText(registersJson(*c.argRegisters));
    else if (c.argsPositional) appendPositionalJson(c.args, c.argsMore, out);
    else appendNamedJson(c.args, out);
    out += ",\"results\":";
    if (c.resultRegister) {
      out += '[';
      appendDecimal(*c.resultRegister, out);
      out += ']';
    } else if (c.results) {
      appendValueArray(*c.results, out);
      appendResultNames(*c.results, out);
    } else {
      out += "null";
    }
    out += ",\"duration_ns\":";
    if (c.durationNs) appendDecimal(*c.durationNs, out);
    else out += "null";
    if (!c.argsUnavailable.empty()) {
      out += ",\"args_unavailable\":";
      appendJsonString(c.argsUnavailable, out);
    }
    if (c.inlinedInto) {
      out += ",\"inlined_into\":";
      appendJsonString(*c.inlinedInto, out);
      out += ",\"file\":";
      appendJsonString(c.file, out);
      out += ",\"line\":";
      appendDecimal(c.line, out);
    }
    // Wall-clock time of ts_ns, to match lines against logs (output/wall_time.hpp).
    out += ",\"time\":\"";
    appendRfc3339Nanos(static_cast<int64_t>(c.tsNs) + realtimeOffsetNs_, out);
    out += '"';
    if (stack) {
      out += ",\"stack\":[";
      for (size_t i = 0; i < c.stack.size(); i++) {
        if (i) out += ',';
        appendJsonString(frameText(c.stack[i]), out);
      }
      out += "],\"stack_cut\":";
      out += c.stackCut ? "true" : "false";  // deeper than the kernel records: the outer frames are missing
    }
    out += "}\n";
    lines_.lineDone();
  }

  void breakHit(const api::Call& c, long long hit, const HitShape& shape) override {
    boost::json::object o{{"time", isoTime(std::chrono::system_clock::now())}, {"hit", hit}};
    hitFields(o, c, shape);
    std::cout << jsonText(o) << std::endl;
  }

  void sample(const Sample& s, const HitShape& shape) override {
    boost::json::object o{{"time", isoTime(std::chrono::system_clock::now())},
                          {"sample", s.index},
                          {"elapsed_s", std::round(s.elapsedS * 1000) / 1000},
                          {"miss", s.call == nullptr && s.values == nullptr},
                          {"pause_ms", std::round(s.pauseMs * 100) / 100}};
    if (s.values) o["values"] = namedJson(*s.values);
    else if (s.call) hitFields(o, *s.call, shape);
    else o["function"] = s.function;
    std::cout << jsonText(o) << std::endl;
  }

  void readValue(const std::string& expr, const Value& v) override {
    boost::json::object o{{"expr", expr}, {"type", v.type}, {"value", renderJson(v)}};
    std::cout << jsonText(o) << '\n';
  }

  void change(const std::string& var, const Value& before, const Value& after) override {
    boost::json::object o{{"var", var}, {"type", after.type}, {"old", renderJson(before)}, {"new", renderJson(after)}};
    std::cout << jsonText(o) << '\n';
  }

  void countInterval(const Interval& in, const std::vector<CountRow>& rows) override {
    for (const auto& r : rows) {
      boost::json::object o{{"func", r.func}, {"count", r.count}, {"delta", r.delta}, {"rate", std::llround(r.rate)},
                            {"elapsed_ms", std::llround(r.elapsedS * 1000)},
                            {"interval_ms", std::llround(in.lengthS * 1000)}};
      addLate(o, in);
      std::cout << jsonText(o) << '\n';
    }
    if (in.omitted) printOmitted(in.omitted, in.elapsedS, false);
  }

  void intervalEnd(const Interval& in) override {
    boost::json::object o{{"elapsed_ms", std::llround(in.elapsedS * 1000)},
                          {"interval_ms", std::llround(in.lengthS * 1000)}};
    addLate(o, in);
    if (in.cost) {
      o["cpu_ms"] = in.cost->cpuMs;
      o["share_pct"] = in.cost->sharePct;
      o["session_cpu_ms"] = in.cost->sessionCpuMs;
      o["session_share_pct"] = in.cost->sessionSharePct;
      o["budget_pct"] = in.cost->budgetPct;
      o["enforced"] = in.cost->enforced;
    }
    std::cout << jsonText(boost::json::object{{"interval_cost", o}}) << '\n';
  }

  void countTotals(const std::vector<CountTotal>& rows, size_t omitted) override {
    for (const auto& r : rows) {
      boost::json::object o{{"func", r.func}, {"count", r.count}, {"final", true}};
      if (r.droppedAtS) o["dropped_at_ms"] = std::llround(*r.droppedAtS * 1000);
      std::cout << jsonText(o) << '\n';
    }
    if (omitted) printOmitted(omitted, std::nullopt, true);
  }

  // A record after the trace lines (bound actions, the session cost): in
  // order behind any lines the flush before it had to hold (a full pipe at
  // the session's end: output/stdout_lines.hpp), else through std::cout as
  // count's and latency's records.
  void record(const std::string& json) {
    if (lines_.holding()) {
      lines_.buffer() += json;
      lines_.buffer() += '\n';
      lines_.lineDone();
    } else {
      std::cout << json << '\n';
    }
  }

  void bound(const api::BoundAction& a) override {
    lines_.flush();  // the trace lines before it go first
    output::noticeToStderr(a.text);
    boost::json::object o{{"action", api::kindName(a.kind)},
                          {"elapsed_ms", std::llround(a.elapsedS * 1000)},
                          {"share_pct", a.sharePct},
                          {"budget_pct", a.budgetPct},
                          {"message", a.text}};
    if (!a.func.empty()) o["func"] = a.func;
    if (a.kind == api::BoundAction::Kind::Dropped) o["count"] = a.count;
    if (a.kind == api::BoundAction::Kind::Sampled) o["sample_every"] = a.sampleEvery;
    record(jsonText(boost::json::object{{"overhead_bound", o}}));
  }

  void foldedInterval(const Interval&) override {}

  void foldedStack(const std::string& stack, uint64_t count, const std::optional<Interval>& in) override {
    boost::json::array frames;
    for (size_t start = 0; start <= stack.size();) {
      size_t end = stack.find(';', start);
      if (end == std::string::npos) end = stack.size();
      frames.emplace_back(stack.substr(start, end - start));
      start = end + 1;
    }
    boost::json::object o{{"stack", std::move(frames)}, {"count", count}};
    if (in) {
      o["elapsed_ms"] = std::llround(in->elapsedS * 1000);
      o["interval_ms"] = std::llround(in->lengthS * 1000);
    }
    lines_.buffer() += jsonText(o);
    lines_.buffer() += '\n';
    lines_.lineDone();
  }

  void screen(const std::vector<std::string>& lines) override {
    boost::json::array a;
    for (const auto& l : lines) a.emplace_back(l);
    lines_.buffer() += jsonText(boost::json::object{{"screen", std::move(a)}});
    lines_.buffer() += '\n';
    lines_.lineDone();
    lines_.flush();
  }

  void calibration(const HostCosts& c, const std::optional<ProbeMeasure>& now) override {
    boost::json::object o{{"emulated_ns", std::llround(c.emulatedNs)},
                          {"stepped_ns", std::llround(c.steppedNs)},
                          {"return_ns", std::llround(c.returnNs)},
                          {"source", c.source},
                          {"delve_stop_ns", std::llround(c.delveStopNs)},
                          {"delve_source", c.delveSource}};
    if (now)
      o["measured"] = {{"emulated_ns", std::llround(now->emulatedNs)},
                       {"stepped_ns", std::llround(now->steppedNs)},
                       {"return_ns", std::llround(now->returnNs)},
                       {"load", now->mark.load},
                       {"cpus", now->mark.cpus}};
    record(boost::json::serialize(o));
  }

  void overheadTable(const std::vector<OverheadRow>& rows, const HostCosts&) override {
    for (const auto& r : rows) {
      if (!r.error.empty()) {
        record(boost::json::serialize(boost::json::object{{"mode", r.mode}, {"error", r.error}}));
        continue;
      }
      boost::json::array runs;
      for (double x : r.runs) runs.push_back(std::llround(x));
      boost::json::object o{{"mode", r.mode}, {"ops_per_s", std::llround(r.opsPerS)},
                            {"slowdown", std::round(r.slowdown * 100) / 100}, {"runs", std::move(runs)}};
      o["per_hit_ns"] = r.perHitNs ? boost::json::value(std::llround(*r.perHitNs)) : boost::json::value(nullptr);
      if (r.perHitNs) o["per_hit_from"] = r.perHitFromCpu ? "target_cpu" : "wall_time";
      o["expected_per_hit_ns"] = r.expectedNs ? boost::json::value(std::llround(*r.expectedNs)) : boost::json::value(nullptr);
      record(boost::json::serialize(o));
    }
  }

  void sessionCost(const api::SessionCost& c) override {
    lines_.flush();
    output::noticeToStderr(api::describe(c));
    boost::json::object o{{"elapsed_ms", std::llround(c.elapsedS * 1000)},
                          {"cpu_ms", c.cpuMs},
                          {"stopped_ms", c.stoppedMs},
                          {"stopped_measured", c.stoppedMeasured},
                          {"stopped_at_hits_ms", c.stoppedAtHitsMs},
                          {"share_pct", c.sharePct()},
                          {"budget_pct", c.budgetPct},
                          {"enforced", c.enforced},
                          {"peak_rate", std::llround(c.peakRate)},
                          {"figures", c.figures}};
    if (!c.peakFunction.empty()) o["peak_func"] = c.peakFunction;
    if (c.hiddenCalls) o["hidden_calls"] = c.hiddenCalls;
    if (c.filteredOut) o["filtered_out"] = *c.filteredOut;
    if (c.eventsSent) o["events_sent"] = *c.eventsSent;
    if (c.detachMs) o["detach_ms"] = std::round(*c.detachMs * 10) / 10;
    if (c.targetCpuMs) o["target_cpu_ms"] = *c.targetCpuMs;
    if (c.machineCpuMs) o["machine_cpu_ms"] = *c.machineCpuMs;
    if (c.targetCpuMs || c.machineCpuMs) {
      o["capped"] = c.capped;
      if (c.capped) o["estimate_cpu_ms"] = c.estimateCpuMs;
    }
    boost::json::array actions;
    for (const auto& a : c.actions) actions.push_back(boost::json::value(a));
    o["bound_actions"] = std::move(actions);
    record(jsonText(boost::json::object{{"session_cost", o}}));
  }

  void globalRead(const std::string& var, std::optional<int64_t> value, std::optional<long long> rate,
                  double elapsedS) override {
    boost::json::object o{{"var", var}, {"value", value ? boost::json::value(*value) : boost::json::value(nullptr)}};
    if (value) o["rate"] = rate ? boost::json::value(*rate) : boost::json::value(nullptr);
    o["elapsed_ms"] = std::llround(elapsedS * 1000);
    std::cout << jsonText(o) << '\n';
  }

  void latency(const std::string& func, const LatencyStats& s, const LatencyReport& rep) override {
    boost::json::array buckets;
    for (const auto& b : s.log2Buckets())
      buckets.push_back(boost::json::object{{"low", b.low}, {"high", b.high}, {"count", b.count}});
    boost::json::object o{{"func", func},
                          {"count", s.count},
                          {"min_ns", s.minNs},
                          {"p50_ns", s.percentile(50)},
                          {"p90_ns", s.percentile(90)},
                          {"p99_ns", s.percentile(99)},
                          {"max_ns", s.maxNs},
                          {"mean_ns", static_cast<uint64_t>(s.meanNs())},
                          {"mismatches", s.mismatches},
                          {"buckets", std::move(buckets)}};
    o["elapsed_ms"] = std::llround(rep.elapsedS * 1000);
    // An interval's object describes that interval alone (bcc funclatency
    // -i); the final one, the whole session.
    if (rep.interval) {
      o["interval_ms"] = std::llround(rep.interval->lengthS * 1000);
      addLate(o, *rep.interval);
    }
    if (rep.probeCostNs > 0) o["probe_cost_ns"] = std::llround(rep.probeCostNs);
    // The range's bottom, when probe_cost_ns is only its top (mixed call ends).
    if (rep.probeCostLowNs > 0) o["probe_cost_min_ns"] = std::llround(rep.probeCostLowNs);
    if (rep.final) o["final"] = true;
    std::cout << jsonText(o) << '\n';
  }

  void function(const FunctionRow& r) override {
    boost::json::object o;
    o["func"] = r.name;
    o["entry"] = r.entry ? boost::json::value(hex(*r.entry)) : boost::json::value(nullptr);
    o["size"] = r.size;
    o["file"] = r.file;
    o["line"] = r.line;
    o["signature"] = r.signature ? boost::json::value(*r.signature) : boost::json::value(nullptr);
    if (!r.signatureFrom.empty()) o["signature_from"] = r.signatureFrom;
    if (r.layout) o["layout"] = *r.layout;
    if (r.returnsReason) {
      o["returns"] = nullptr;  // unknown: an empty list would read as "no RET"
      o["returns_reason"] = *r.returnsReason;
    } else {
      boost::json::array rets;
      for (uint64_t a : r.returns) rets.emplace_back(hex(a));
      o["returns"] = std::move(rets);
    }
    o["probe"] = r.probe ? boost::json::value(hex(*r.probe)) : boost::json::value(nullptr);
    o["probe_kind"] = r.probeKind;
    if (!r.probeReason.empty()) o["probe_reason"] = r.probeReason;
    if (r.inlinedInto) {
      // An inlined body (probe_kind "inlined"): file:line is the call's.
      o["inlined_into"] = *r.inlinedInto;
      o["sites"] = r.sites;
    }
    if (r.callSites) o["call_sites"] = *r.callSites;
    if (r.callSitesReason) o["call_sites_reason"] = *r.callSitesReason;
    std::cout << jsonText(o) << '\n';
  }

  void targetInfo(const TargetInfo& t) override {
    auto opt = [](const std::optional<std::string>& v) { return v ? boost::json::value(*v) : boost::json::value(nullptr); };
    boost::json::object o;
    if (t.pid) o["pid"] = *t.pid;
    o["exe"] = t.exe;
    if (t.loadBias) o["load_bias"] = hex(*t.loadBias);
    o["go_version"] = opt(t.goVersion);
    o["main_path"] = opt(t.mainPath);
    o["main_module"] = opt(t.mainModule);
    o["pie"] = t.pie;
    o["symtab"] = t.symtab;
    o["dwarf"] = t.dwarf;
    o["debug_info"] = boost::json::object{
        {"source", t.debugInfoSource},
        {"path", t.debugInfoPath.empty() ? boost::json::value(nullptr) : boost::json::value(t.debugInfoPath)}};
    o["pclntab_format"] = t.pclntabFormat;
    o["functions"] = t.functions;
    if (const auto& a = t.arguments)
      o["arguments"] = boost::json::object{{"dwarf", a->dwarf},         {"method_table", a->method},
                                           {"receiver", a->receiver},
                                           {"layout", a->layout},       {"layout_placed", a->placed},
                                           {"no_arguments", a->noArguments}, {"raw", a->raw}};
    o["goid_offset"] = t.goidOffset ? boost::json::value(*t.goidOffset) : boost::json::value(nullptr);
    o["goid_offset_source"] = t.goidOffsetHow;
    o["goid_offset_assumed"] = t.goidOffsetAssumed;
    if (const auto& cut = t.truncated) {
      boost::json::array missing, lost;
      for (const auto& m : cut->missing) missing.emplace_back(m);
      for (const auto& l : cut->lost) lost.emplace_back(l);
      o["truncated"] = boost::json::object{{"file_bytes", cut->fileBytes},
                                           {"described_bytes", cut->describedBytes},
                                           {"missing", std::move(missing)},
                                           {"lost", std::move(lost)}};
    }
    if (const auto& ns = t.namespaces) {
      boost::json::object n{{"mount", ns->mountNs},
                            {"pid", ns->pidNs},
                            {"own_mount", ns->otherMountNs},
                            {"own_pid", ns->otherPidNs},
                            {"pid_inside", ns->innerPid ? boost::json::value(*ns->innerPid) : boost::json::value(nullptr)}};
      if (!ns->hostExePath.empty()) n["file_from_here"] = ns->hostExePath;
      o["namespaces"] = std::move(n);
    }
    if (const auto& d = t.delve) {
      auto str = [](const std::optional<std::string>& v) { return v ? boost::json::value(*v) : boost::json::value(nullptr); };
      boost::json::value reads = nullptr;
      if (d->minGoMinor && d->maxGoMinor)
        reads = boost::json::array{"1." + std::to_string(*d->minGoMinor), "1." + std::to_string(*d->maxGoMinor)};
      o["delve"] = boost::json::object{{"path", str(d->path)},
                                       {"version", d->path ? str(d->version) : boost::json::value(nullptr)},
                                       {"reads_go", d->path ? reads : boost::json::value(nullptr)},
                                       {"source", d->path ? boost::json::value(d->origin) : boost::json::value(nullptr)},
                                       {"covers", d->covers},
                                       {"why", d->why},
                                       {"hint", d->hint.empty() ? boost::json::value(nullptr) : boost::json::value(d->hint)}};
    }
    std::cout << jsonText(o) << '\n';
  }

  void doctor(const api::DoctorReport& r) override {
    boost::json::object o;
    o["pid"] = r.pid;
    o["exe"] = r.exe;
    o["mappings"] = r.mappings;
    o["bytes_compared"] = r.bytesCompared;
    boost::json::array fns;
    for (const auto& f : r.functions) {
      boost::json::array bytes;
      for (const auto& b : f.bytes) {
        boost::json::object x;
        x["addr"] = hex(b.addr);
        x["file_offset"] = hex(b.fileOffset);
        x["memory"] = b.memory;
        x["file"] = b.file;
        x["int3"] = b.int3;
        x["uprobe_link"] = b.uprobeLink ? boost::json::value(b.uprobeLink) : boost::json::value(nullptr);
        x["restored"] = b.restored;
        x["tracer_owned"] = b.tracerOwned;
        bytes.push_back(std::move(x));
      }
      fns.push_back(boost::json::object{{"function", f.name}, {"entry", f.entry ? boost::json::value(hex(f.entry)) : boost::json::value(nullptr)}, {"bytes", std::move(bytes)}});
    }
    o["functions"] = std::move(fns);
    o["differing"] = r.differing;
    o["int3"] = r.int3;
    o["live_uprobe"] = r.liveUprobe;
    o["tracer_int3"] = r.tracerInt3;
    o["tracer_pid"] = r.tracer ? boost::json::value(r.tracer) : boost::json::value(nullptr);
    o["tracer"] = r.tracer ? boost::json::value(r.tracerName) : boost::json::value(nullptr);
    o["fix"] = r.fix;
    o["restored"] = r.restored;
    o["stopped"] = r.stopped;
    o["remaining"] = r.remaining();
    boost::json::array links;
    for (auto id : r.uprobeLinks) links.push_back(id);
    o["uprobe_links"] = std::move(links);
    std::cout << jsonText(o) << '\n';
  }

  void flush() override {
    lines_.flush();
    std::cout.flush();
  }

  bool open() const override { return static_cast<bool>(std::cout) && !lines_.closed(); }

 private:
  StdoutLines lines_;
  const int64_t realtimeOffsetNs_ = measureRealtimeOffsetNs();  // at the session's start (output/wall_time.hpp)
};

}  // namespace

std::unique_ptr<Output> makeJsonOutput() { return std::make_unique<JsonOutput>(); }

}  // namespace goscope::output
