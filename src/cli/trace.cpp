// goscope trace: one line per call — time, pid, goroutine, the function with
// its arguments decoded by their Go types, and its results at return. The
// kernel copies registers and the few memory blocks each value needs (a
// capture plan); decoding happens here. --stack adds the symbolized user
// stack; --folded prints in-kernel stack counts for flame graphs instead.
#include <boost/json.hpp>
#include <cstdio>
#include <iostream>
#include <algorithm>
#include <map>
#include <tuple>

#include "backend/bpf/bpf_engine.hpp"
#include "cli/command.hpp"
#include "cli/function_capture.hpp"
#include "cli/strategy_options.hpp"
#include "cli/trace_delve.hpp"
#include "cli/trace_options.hpp"
#include "util/stop_signals.hpp"
#include "output/hex.hpp"
#include "output/histogram_text.hpp"
#include "output/stack_symbolizer.hpp"
#include "output/value_format.hpp"
#include "probe/abi_layout.hpp"
#include "probe/capture_plan.hpp"
#include "probe/signature_parse.hpp"
#include "probe/type_names.hpp"
#include "session/go_runtime_facts.hpp"

namespace goscope::cli {

namespace {

// A SPEC with a space or ending in "()" is a signature the user gives for a
// stripped binary: `main.add(x int, y int) int`. Anything else is a pattern.
bool looksLikeSignature(const std::string& s) {
  return s.find(' ') != std::string::npos || (s.size() > 2 && s.ends_with("()"));
}

struct PendingCall {
  uint64_t tsNs = 0;
  std::string argsText;
  boost::json::value argsJson;
  std::vector<uint64_t> stack;
};

class Tracer {
 public:
  Tracer(const Selection& sel, std::vector<FunctionTrace> traces, const GoBinary& bin, TracedTarget& target, bool json,
         bool stack)
      : sel_(sel), traces_(std::move(traces)), bin_(bin), target_(target), json_(json), stack_(stack),
        names_(TypeNamer::forBinary(bin)) {}

  // A -c command that ran and exited before its maps could be read (a
  // short program) leaves no load bias to look up: the entry events carry
  // it instead, as the probed address minus the probe's link-time address.
  void deriveBiasFromEvents() { deriveBias_ = true; }
  uint64_t bias() const { return bias_; }

  void setBias(uint64_t b) {
    bias_ = b;
    names_.setLoadBias(b);
  }

  void onEvent(const bpf::Event& e) {
    StopSignalsHeld held;  // a Ctrl-C must not cut a line (stdout would drop the rest)
    if (e.probeId >= traces_.size()) return;
    const FunctionTrace& t = traces_[e.probeId];
    if (deriveBias_ && !e.isReturn() && e.ip) {
      setBias(e.ip - sel_.functions[e.probeId].code.probe.address);
      deriveBias_ = false;
    }
    auto key = std::make_tuple(e.pid, e.g, e.frame, e.probeId);
    if (!e.isReturn()) {
      PendingCall c{e.tsNs, {}, nullptr, e.stack};
      if (t.raw) {
        c.argsText = rawRegs(e, 4);
        c.argsJson = rawRegsJson(e);
      } else {
        auto vals = decodeArgs(e, t.layout, t.plan, names_);
        c.argsText = valuesText(vals, false);
        c.argsJson = valuesObject(vals);
      }
      if (pending_.size() >= kMaxPending) {  // calls that never return (panics): bounded
        dropped_ += pending_.size();
        pending_.clear();
      }
      pending_[key] = std::move(c);
      return;
    }
    PendingCall c;
    bool haveEntry = false;
    if (auto it = pending_.find(key); it != pending_.end()) {
      c = std::move(it->second);
      pending_.erase(it);
      haveEntry = true;
    } else {
      unmatched_++;
    }
    std::string resText;
    boost::json::array resJson;
    if (t.raw) {
      resText = rawRegs(e, 1);
      resJson.push_back(e.regs[0]);
    } else {
      auto vals = decodeResults(e, t.layout, t.plan, names_);
      resText = valuesText(vals, true);
      resJson = valuesArray(vals);
    }
    print(*sel_.functions[e.probeId].fn, e, haveEntry ? &c : nullptr, resText, std::move(resJson));
  }

  void finish(const bpf::Engine& eng) {
    StopSignalsHeld held;
    std::fflush(stdout);
    auto st = eng.stats();
    if (st.lost() > 0)
      std::fprintf(stderr, "goscope: %llu events lost (ring buffer full: %llu, busy: %llu); raise nothing, narrow the pattern\n",
                   static_cast<unsigned long long>(st.lost()), static_cast<unsigned long long>(st.lostRingFull),
                   static_cast<unsigned long long>(st.lostBusy));
    if (!pending_.empty() || dropped_)
      std::fprintf(stderr, "goscope: %zu calls had not returned when tracing ended\n", pending_.size() + dropped_);
    if (unmatched_)
      std::fprintf(stderr, "goscope: %llu returns of calls already running when probes were attached\n",
                   static_cast<unsigned long long>(unmatched_));
  }

 private:
  void print(const GoFunction& fn, const bpf::Event& ret, const PendingCall* call, const std::string& resText,
             boost::json::array resJson) {
    uint64_t ts = call ? call->tsNs : ret.tsNs;
    if (json_) {
      boost::json::object o{{"func", fn.name}, {"pid", ret.pid}, {"goid", ret.goid}, {"ts_ns", ts},
                            {"args", call ? call->argsJson : boost::json::value(nullptr)}, {"results", std::move(resJson)}};
      o["duration_ns"] = call ? boost::json::value(ret.tsNs - call->tsNs) : boost::json::value(nullptr);
      if (stack_ && call) {
        boost::json::array frames;
        for (const auto& f : symbolizeStack(bin_.pclntab(), call->stack, bias_)) frames.push_back(boost::json::value(frameText(f)));
        o["stack"] = std::move(frames);
      }
      std::cout << boost::json::serialize(o) << '\n';
    } else {
      std::string line = wallClock() + " pid=" + std::to_string(ret.pid) + " goid=" + std::to_string(ret.goid) + " " +
                         fn.name + "(" + (call ? call->argsText : "?") + ")";
      if (!resText.empty()) line += " = " + resText;
      if (call) line += "  [" + humanDuration(ret.tsNs - call->tsNs) + "]";
      std::printf("%s\n", line.c_str());
      if (stack_ && call)
        for (const auto& f : symbolizeStack(bin_.pclntab(), call->stack, bias_)) std::printf("    %s\n", frameText(f).c_str());
    }
  }

  static constexpr size_t kMaxPending = 1 << 20;
  const Selection& sel_;
  std::vector<FunctionTrace> traces_;
  const GoBinary& bin_;
  TracedTarget& target_;
  bool json_, stack_;
  TypeNamer names_;
  uint64_t bias_ = 0;
  bool deriveBias_ = false;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t, uint32_t>, PendingCall> pending_;
  size_t dropped_ = 0;
  uint64_t unmatched_ = 0;
};

}  // namespace

int runTrace(const std::vector<std::string>& argv) {
  auto specs = traceOptionSpecs({{"stack", 0, false, "print each call's user stack, symbolized"},
                                 {"folded", 0, false, "print stack counts in the folded format flame graphs read"},
                                 {"max-string", 0, true, "bytes of each string to read (1-256, default 64)"}});
  for (auto& o : strategyOptionSpecs(true)) specs.push_back(o);
  auto args = orRaise(parseArgs("trace", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope trace (-p PID | -c 'CMD ARGS' | -b BINARY) [--stack | --folded] [-d SECS] [--json] SPEC...", specs)
              << "SPEC: a function pattern, or a signature for a stripped binary: 'main.add(x int, y int) int'\n";
    return 0;
  }
  // Signatures become patterns for their function names.
  std::map<std::string, std::string> signatures;
  std::vector<std::string> patternArgs;
  for (const auto& spec : args.positional()) {
    if (looksLikeSignature(spec)) {
      auto sig = parseUserSignature(spec);
      if (!sig) raise(sig.error());
      if (auto l = layoutFromSignature(spec); !l) raise(l.error());
      signatures[sig->funcName] = spec;
      patternArgs.push_back(sig->funcName);
    } else {
      patternArgs.push_back(spec);
    }
  }
  std::vector<std::string> rebuilt;
  for (const auto& a : argv) {
    bool isSpec = std::find(args.positional().begin(), args.positional().end(), a) != args.positional().end();
    if (!isSpec) rebuilt.push_back(a);
  }
  for (const auto& p : patternArgs) rebuilt.push_back(p);
  args = orRaise(parseArgs("trace", specs, rebuilt));

  CaptureOptions copts;
  copts.maxString = static_cast<uint16_t>(orRaise(args.getInt("max-string", 64, 1, 256)));
  bool folded = args.has("folded"), stack = args.has("stack"), json = args.has("json");
  if (folded && stack) raise({ErrorKind::Usage, "trace: --stack and --folded do not go together"});

  TraceSetup setup = prepareTrace(args, "trace");
  const GoBinary& bin = setup.target.binary();

  // One request, two plans: BPF probes (arguments and results, the process
  // never stops) or, when BPF cannot read what is asked (floats in XMM
  // registers) or with --strategy delve, Delve breakpoints (arguments only).
  // --folded counts stacks in the kernel: that is a count.
  ProbeRequest request = requestFromTraceArgs(args, folded ? Action::Count : Action::Trace, setup);
  request.capture.args = request.capture.results = !folded;
  request.capture.stack = stack || folded;
  applyStrategyOptions(args, request);
  Plan plan = planOrRaise(args, request, bin, request.target.pid);
  if (plan.backend == Backend::Delve) {
    DelveTraceOptions dto{*request.target.pid, patternArgs, setup.loop.durationS, json, stack};
    try {
      return runTraceWithDelve(args, bin, dto);
    } catch (const FatalError& e) {
      const bool delveSpecific = e.error.kind == ErrorKind::External || e.error.kind == ErrorKind::BadTarget ||
                                 e.error.kind == ErrorKind::Permission;
      if (request.strategy != StrategyChoice::Auto || plan.fallback != Backend::Bpf || !delveSpecific) throw;
      reportFallback(Backend::Delve, Backend::Bpf, e.error);
    }
  }
  Selection sel = orRaise(selectFunctions(bin, setup.patterns, {.returns = !folded}, setup.target.describe()));
  if (!folded && sel.functions.size() > 4096)
    raise({ErrorKind::Usage, "trace: " + std::to_string(sel.functions.size()) + " functions match; tracing prints a line per call",
           "narrow the pattern, or use goscope count / latency"});

  std::vector<FunctionTrace> traces;
  for (const auto& f : sel.functions) traces.push_back(traceFor(bin, *f.fn, signatures, copts));

  bpf::EngineOptions eo{.goidOffset = goidOffset(bin)};
  eo.ringBytes = 16u << 20;
  if (stack || folded) eo.stackTraceEntries = 16384;
  eo.maxLatencyProbes = std::max<uint32_t>(eo.maxLatencyProbes, static_cast<uint32_t>(sel.functions.size()));
  eo.maxCaptureSpecs = std::max<uint32_t>(eo.maxCaptureSpecs, 2 * static_cast<uint32_t>(sel.functions.size()));
  auto engine = orRaise(bpf::Engine::load(eo));
  for (size_t i = 0; i < sel.functions.size(); i++) {
    bpf::ProbeConfig cfg;
    if (folded) {
      cfg.count = true;
      cfg.stackCounts = true;
    } else {
      cfg.eventAtEntry = cfg.eventAtReturn = true;
      cfg.userStack = stack;
      cfg.entryReads = traces[i].plan.entryReads;
      cfg.returnReads = traces[i].plan.returnReads;
    }
    orRaise(engine->configureProbe(sel.functions[i].probeId, cfg));
  }
  auto stats = orRaise(engine->attach(setup.target.attachPath(), setup.target.pidFilter(), sel.points));
  orRaise(setup.target.release());
  announce(setup, sel, stats, json);

  Tracer tracer(sel, std::move(traces), bin, setup.target, json, stack);
  if (!setup.target.isBinaryWide()) {
    if (auto bias = setup.target.loadBias()) tracer.setBias(*bias);
    else if (setup.target.isLaunched()) tracer.deriveBiasFromEvents();
    else raise(bias.error());
  }
  auto onEvent = [&](const bpf::Event& e) { tracer.onEvent(e); };
  EndReason why = runSessionLoop(
      setup.target, setup.loop, [&](int ms) { (void)engine->poll(ms, onEvent); }, [] {});
  (void)engine->poll(0, onEvent);  // what is still in the ring
  if (folded) {
    std::map<std::string, uint64_t> lines;
    uint64_t bias = tracer.bias();
    for (const auto& sc : orRaise(engine->stackCounts())) {
      std::vector<uint64_t> pcs = sc.frames;
      if (pcs.empty() && sc.caller) pcs = {sc.caller};
      lines[foldedLine(symbolizeStack(bin.pclntab(), pcs, bias))] += sc.count;
    }
    for (const auto& [l, n] : lines) std::printf("%s %llu\n", l.c_str(), static_cast<unsigned long long>(n));
  }
  tracer.finish(*engine);
  std::fprintf(stderr, "goscope: %s\n", describe(why).c_str());
  engine->detachAll();
  raiseIfTargetGone(setup.target, why);
  return 0;
}

}  // namespace goscope::cli
