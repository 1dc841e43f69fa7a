#include "cli/break_bpf.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <iostream>

#include "backend/bpf/bpf_engine.hpp"
#include "cli/function_capture.hpp"
#include "cli/trace_options.hpp"
#include "output/stack_symbolizer.hpp"
#include "probe/pattern.hpp"
#include "probe/type_names.hpp"
#include "session/function_selection.hpp"
#include "session/go_runtime_facts.hpp"
#include "session/session_loop.hpp"
#include "session/traced_target.hpp"
#include "util/json_text.hpp"
#include "util/stop_signals.hpp"

namespace goscope::cli {

namespace {

std::string baseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class BpfHitPrinter {
 public:
  BpfHitPrinter(const BreakOptions& o, const Selection& sel, std::vector<FunctionTrace> traces, const GoBinary& bin,
                uint64_t bias)
      : o_(o), sel_(sel), traces_(std::move(traces)), bin_(bin), bias_(bias), names_(TypeNamer::forBinary(bin)) {
    names_.setLoadBias(bias);
  }

  // False once -n hits are printed (later events of the same batch are dropped).
  bool onEvent(const bpf::Event& e) {
    if (e.isReturn() || e.probeId >= traces_.size() || done()) return !done();
    StopSignalsHeld held;  // a Ctrl-C must not cut a line (stdout would drop the rest)
    const FunctionTrace& t = traces_[e.probeId];
    const GoFunction& fn = *sel_.functions[e.probeId].fn;
    auto frames = symbolizeStack(bin_.pclntab(), std::vector<uint64_t>{fn.entry + bias_}, bias_);
    const SourceFrame where = frames.empty() ? SourceFrame{} : frames[0].source;
    std::vector<DecodedValue> vals;
    if (o_.parts.args && !t.raw) vals = decodeArgs(e, t.layout, t.plan, names_);
    std::vector<StackFrame> stack;
    if (o_.parts.stack > 0) stack = symbolizeStack(bin_.pclntab(), e.stack, bias_);
    if (stack.size() > static_cast<size_t>(o_.parts.stack)) stack.resize(o_.parts.stack);
    ++hits_;
    auto now = std::chrono::system_clock::now();
    if (o_.json) {
      boost::json::object j{{"time", isoTime(now)}, {"hit", hits_}, {"goroutine", e.goid}, {"function", fn.name},
                            {"file", where.file}, {"line", where.line}};
      if (o_.parts.args) j["args"] = t.raw ? rawRegsJson(e) : valuesObject(vals);
      if (o_.parts.stack > 0) {
        boost::json::array a;
        for (const auto& f : stack)
          a.push_back(boost::json::object{{"function", f.source.function}, {"file", f.source.file}, {"line", f.source.line}});
        j["stack"] = std::move(a);
      }
      std::cout << jsonText(j) << std::endl;
    } else {
      std::string line = clockText(now) + " g" + std::to_string(e.goid) + " " + fn.name;
      if (o_.parts.args) line += "(" + (t.raw ? rawRegs(e, 4) : valuesText(vals, false)) + ")";
      line += " " + baseName(where.file) + ":" + std::to_string(where.line);
      if (o_.parts.stack > 0) {
        line += " | stack:";
        for (size_t i = 0; i < stack.size(); i++)
          line += std::string(i ? " <-" : "") + " " + (stack[i].known ? stack[i].source.function + " " +
                                                                             baseName(stack[i].source.file) + ":" +
                                                                             std::to_string(stack[i].source.line)
                                                                       : frameText(stack[i]));
      }
      std::cout << line << std::endl;
    }
    if (!std::cout) closed_ = true;
    return !done();
  }

  bool done() const { return closed_ || (o_.maxHits > 0 && hits_ >= o_.maxHits); }
  bool outputClosed() const { return closed_; }
  long long hits() const { return hits_; }

 private:
  const BreakOptions& o_;
  const Selection& sel_;
  std::vector<FunctionTrace> traces_;
  const GoBinary& bin_;
  uint64_t bias_;
  TypeNamer names_;
  long long hits_ = 0;
  bool closed_ = false;
};

}  // namespace

int runBreakWithBpf(const BreakOptions& o) {
  installStopSignals();
  TargetSpec spec;
  spec.pid = o.pid;
  TracedTarget target = orRaise(TracedTarget::open(spec));
  const GoBinary& bin = target.binary();
  Pattern pattern = orRaise(Pattern::parse(o.location));
  Selection sel = orRaise(selectFunctions(bin, {pattern}, {}, target.describe()));
  std::vector<FunctionTrace> traces;
  for (const auto& f : sel.functions) traces.push_back(traceFor(bin, *f.fn, {}, CaptureOptions{}));

  bpf::EngineOptions eo{.goidOffset = goidOffset(bin)};
  if (o.parts.stack > 0) eo.stackTraceEntries = 16384;
  eo.maxCaptureSpecs = std::max<uint32_t>(eo.maxCaptureSpecs, 2 * static_cast<uint32_t>(sel.functions.size()));
  auto engine = orRaise(bpf::Engine::load(eo));
  for (size_t i = 0; i < sel.functions.size(); i++) {
    bpf::ProbeConfig cfg;
    cfg.eventAtEntry = true;
    cfg.userStack = o.parts.stack > 0;
    if (o.parts.args) cfg.entryReads = traces[i].plan.entryReads;
    orRaise(engine->configureProbe(sel.functions[i].probeId, cfg));
  }
  auto stats = orRaise(engine->attach(target.attachPath(), target.pidFilter(), sel.points));
  std::fprintf(stderr, "goscope: BPF entry probe on %s (%zu function%s) in %s in %.1f ms: the process does not stop; Ctrl-C to stop\n",
               o.location.c_str(), sel.functions.size(), sel.functions.size() == 1 ? "" : "s", target.describe().c_str(),
               stats.attachMs);

  BpfHitPrinter printer(o, sel, std::move(traces), bin, orRaise(target.loadBias()));
  const double t0 = monotonicSeconds();
  auto onEvent = [&](const bpf::Event& e) { printer.onEvent(e); };
  EndReason why = runSessionLoop(target, LoopOptions{0, o.durationS}, [&](int ms) {
    (void)engine->poll(printer.done() ? 0 : std::min(ms, 100), onEvent);
    if (printer.done()) requestStop();  // ends the loop: -n reached or nobody reads
  }, [] {});
  if (!printer.done()) (void)engine->poll(0, onEvent);
  const double activeS = monotonicSeconds() - t0;
  auto detached = engine->detachAll();
  const char* end = printer.outputClosed() ? "output closed"
                    : (o.maxHits > 0 && printer.hits() >= o.maxHits) ? "hit count reached"
                    : why == EndReason::Duration ? "duration reached"
                    : why == EndReason::TargetExited ? "the target exited"
                                                      : "interrupted";
  std::fprintf(stderr, "goscope: %lld hits in %.2f s (%.1f hits/s); %s\n", printer.hits(), activeS,
               activeS > 0 ? printer.hits() / activeS : 0.0, end);
  std::fprintf(stderr, "goscope: PID %d was not stopped (BPF path); detached %zu probes in %.1f ms\n", o.pid,
               detached.points, detached.detachMs);
  raiseIfTargetGone(target, why);
  return 0;
}

}  // namespace goscope::cli
