// Text lines for people. Each line is flushed where hits are rare (break,
// sample) so it shows at once; trace's lines are buffered.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "output/call_parts.hpp"
#include "output/clock_text.hpp"
#include "output/histogram_text.hpp"
#include "output/outputs.hpp"
#include "output/stdout_lines.hpp"
#include "output/wall_time.hpp"
#include "util/hex.hpp"
#include "value/render.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::output {

namespace {

std::string positionalText(const api::Call& c) {
  std::string out;
  appendPositional(c.args, c.argsMore, out);
  return out;
}

// "g1 main.mayPanic(i=7) funcs.go:287 | main.counter=5 | locals: ... | stack: f file:line <- ..."
std::string hitText(const api::Call& c, const HitShape& shape) {
  std::string out = "g" + std::to_string(c.goid) + " " + c.function;
  if (shape.args)
    out += "(" + (!c.argsUnavailable.empty() ? "unavailable: " + c.argsUnavailable
                  : c.argRegisters           ? registersText(*c.argRegisters)
                  : c.argsPositional         ? positionalText(c)
                                             : assignments(c.args, ", ")) + ")";
  out += " " + baseName(c.file) + ":" + std::to_string(c.line);
  if (c.inlinedInto) out += " (inlined into " + *c.inlinedInto + ")";
  if (shape.exprs) out += " | " + assignments(c.exprs, " ");
  if (shape.locals) out += " | locals: " + assignments(c.locals, " ");
  if (shape.stack > 0) {
    out += " | stack:";
    for (size_t i = 0; i < c.stack.size() && i < static_cast<size_t>(shape.stack); ++i)
      out += std::string(i ? " <-" : "") + " " + shortFrameText(c.stack[i]);
    if (c.stackCut || c.stack.size() > static_cast<size_t>(shape.stack)) out += " <- …";  // more frames than shown
  }
  return out;
}

// The width of a table's name column: the longest name, at least `least`.
template <typename Row>
int nameWidth(const std::vector<Row>& rows, size_t least) {
  size_t w = least;
  for (const auto& r : rows) w = std::max(w, r.func.size());
  return static_cast<int>(w);
}

void printOmitted(size_t omitted) {
  if (omitted) std::printf("(%zu more function%s called: --top shows the first N)\n", omitted, omitted == 1 ? "" : "s");
}

class TextOutput final : public Output {
 public:
  // Formatted straight into the line buffer (no string per piece): the
  // same bytes as the pieces' own functions (call_parts, value/render).
  void traceCall(const api::Call& c, bool stack) override {
    std::string& out = lines_.buffer();
    // The call's own time (its entry), not when the line is printed: lines
    // come at returns.
    appendClockMicros(static_cast<int64_t>(c.tsNs) + realtimeOffsetNs_, out);
    out += " pid=";
    appendDecimal(c.pid, out);
    out += " goid=";
    appendDecimal(c.goid, out);
    out += ' ';
    out += c.function;
    out += '(';
    if (!c.argsUnavailable.empty()) out += "unavailable: " + c.argsUnavailable;
    else if (c.argRegisters) appendRegistersText(*c.argRegisters, 4, out);
    else if (c.argsPositional) appendPositional(c.args, c.argsMore, out);
    else appendAssignments(c.args, ", ", out);
    out += ')';
    const size_t beforeResults = out.size();
    out += " = ";
    const size_t resultsAt = out.size();
    if (c.resultRegister) appendRegistersText({*c.resultRegister}, 1, out);
    else if (c.results) appendAssignments(*c.results, ", ", out, true);
    if (out.size() == resultsAt) out.resize(beforeResults);  // no results: no " = "
    if (c.durationNs) {
      out += "  [";
      out += humanDuration(*c.durationNs);
      out += ']';
    }
    if (c.inlinedInto) out += "  [inlined into " + *c.inlinedInto + " at " + baseName(c.file) + ":" + std::to_string(c.line) + "]";
    out += '\n';
    if (stack) {
      for (const auto& f : c.stack) {
        out += "    ";
        out += frameText(f);
        out += '\n';
      }
      if (c.stackCut) out += "    ... (cut: more frames than were recorded)\n";
    }
    lines_.lineDone();
  }

  void breakHit(const api::Call& c, long long, const HitShape& shape) override {
    std::cout << clockText(std::chrono::system_clock::now()) << ' ' << hitText(c, shape) << std::endl;
  }

  void sample(const Sample& s, const HitShape& shape) override {
    char pause[48];
    std::snprintf(pause, sizeof pause, " | pause %.1f ms", s.pauseMs);
    const std::string now = clockText(std::chrono::system_clock::now());
    if (s.values) {
      std::cout << now << " | " << assignments(*s.values, " ") << " | not stopped" << std::endl;
    } else if (s.call) {
      std::cout << now << ' ' << hitText(*s.call, shape) << pause << std::endl;
    } else {
      char miss[64];
      std::snprintf(miss, sizeof miss, " not called within %g s (miss)", s.timeoutS);
      std::cout << now << ' ' << s.function << miss << pause << std::endl;
    }
  }

  void readValue(const std::string& expr, const Value& v) override {
    std::cout << expr << " = " << renderText(v) << " (" << v.type << ")\n";
  }

  void change(const std::string& var, const Value& before, const Value& after) override {
    std::cout << var << " = " << renderText(before) << " -> " << renderText(after) << " (" << after.type << ")\n";
  }

  void countInterval(const Interval& in, const std::vector<CountRow>& rows) override {
    // bcc funccount -i's shape: a stamped header, then the interval's table,
    // most called first; the name column as wide as the longest name.
    std::printf("\n[%s] %.2f s%s\n", wallClock().c_str(), in.lengthS, lateText(in).c_str());
    const int w = nameWidth(rows, 40);
    std::printf("%-*s %12s %14s %14s\n", w, "FUNC", "CALLS", "RATE", "TOTAL");
    for (const auto& r : rows)
      std::printf("%-*s %12llu %12.0f/s %14llu\n", w, r.func.c_str(), static_cast<unsigned long long>(r.delta), r.rate,
                  static_cast<unsigned long long>(r.count));
    if (rows.empty()) std::printf("(no calls)\n");
    printOmitted(in.omitted);
  }

  void intervalEnd(const Interval&) override {}

  void countTotals(const std::vector<CountTotal>& rows, size_t omitted) override {
    const int w = nameWidth(rows, 48);
    std::printf("\n%-*s %12s\n", w, "FUNC", "COUNT");
    for (const auto& r : rows) {
      std::printf("%-*s %12llu", w, r.func.c_str(), static_cast<unsigned long long>(r.count));
      if (r.droppedAtS) std::printf("  [dropped at %.1f s: over the overhead budget]", *r.droppedAtS);
      std::printf("\n");
    }
    if (rows.empty()) std::printf("(no calls)\n");
    printOmitted(omitted);
  }

  void bound(const api::BoundAction& a) override { output::noticeToStderr(a.text); }

  void foldedInterval(const Interval& in) override {
    char length[32];
    std::snprintf(length, sizeof length, "%.2f", in.lengthS);
    lines_.buffer() += "\n[" + wallClock() + "] " + length + " s" + lateText(in) + "\n";
    lines_.lineDone();
  }

  void foldedStack(const std::string& stack, uint64_t count, const std::optional<Interval>&) override {
    std::string& out = lines_.buffer();
    out += stack;
    out += ' ';
    out += std::to_string(count);
    out += '\n';
    lines_.lineDone();
  }

  void screen(const std::vector<std::string>& lines) override {
    std::string& out = lines_.buffer();
    if (screens_++ > 0) out += '\n';
    for (const auto& l : lines) {
      out += l;
      out += '\n';
    }
    lines_.lineDone();
    lines_.flush();  // a screen is read as it comes (a pipe, a terminal)
  }

  void calibration(const HostCosts& c, const std::optional<ProbeMeasure>& now) override {
    if (now)
      std::printf("measured now: %.2f us emulated, %.1f us single-stepped, %.1f us at a RET (%s)\n",
                  now->emulatedNs / 1e3, now->steppedNs / 1e3, now->returnNs / 1e3, describeMark(now->mark).c_str());
    std::printf("plans use: %.2f us emulated, %.1f us single-stepped, %.1f us at a RET (%s)\n", c.emulatedNs / 1e3,
                c.steppedNs / 1e3, c.returnNs / 1e3, c.source.c_str());
    std::printf("a Delve hit: %.2f ms (%s)\n", c.delveStopNs / 1e6, c.delveSource.c_str());
  }

  void overheadTable(const std::vector<OverheadRow>& rows, const HostCosts& costs) override {
    std::printf("\n%-22s %16s %12s %12s %12s   %s\n", "MODE", "TARGET OPS/S", "SLOWDOWN", "PER HIT", "EXPECTED",
                "RANGE (ops/s)");
    for (const auto& r : rows) {
      if (!r.error.empty()) {
        std::printf("%-22s failed: %s\n", r.mode.c_str(), r.error.c_str());
        continue;
      }
      char hit[32] = "-", exp[32] = "-";
      if (r.perHitNs) std::snprintf(hit, sizeof hit, "%.0f ns", *r.perHitNs);
      if (r.expectedNs) std::snprintf(exp, sizeof exp, "%.0f ns", *r.expectedNs);
      auto [lo, hi] = std::minmax_element(r.runs.begin(), r.runs.end());
      std::printf("%-22s %16.0f %11.1fx %12s %12s   %.0f - %.0f\n", r.mode.c_str(), r.opsPerS, r.slowdown, hit, exp,
                  lo == r.runs.end() ? 0.0 : *lo, hi == r.runs.end() ? 0.0 : *hi);
    }
    std::printf("PER HIT: what a hit adds to an operation, from the target's CPU time (from wall time for Delve, which stops it)\n");
    std::printf("EXPECTED: what the strategy plans with (%s; a Delve hit: %s)\n", costs.source.c_str(),
                costs.delveSource.c_str());
  }

  void sessionCost(const api::SessionCost& c) override {
    output::noticeToStderr(api::describe(c));
  }

  void globalRead(const std::string& var, std::optional<int64_t> value, std::optional<long long> rate, double) override {
    if (!value) std::printf("%s: not read yet (no hit)\n", var.c_str());
    else if (rate) std::printf("%s: %lld (%lld ops/s)\n", var.c_str(), static_cast<long long>(*value), *rate);
    else std::printf("%s: %lld\n", var.c_str(), static_cast<long long>(*value));
  }

  void latency(const std::string& func, const LatencyStats& s, const LatencyReport& rep) override {
    if (rep.interval)
      std::printf("\n[%s] %s, last %.2f s%s\n", wallClock().c_str(), func.c_str(), rep.interval->lengthS,
                  lateText(*rep.interval).c_str());
    else std::printf("\n%s\n", func.c_str());
    if (s.count == 0) {
      std::printf("  no completed calls\n");
      return;
    }
    std::printf("  count %llu  min %s  p50 %s  p90 %s  p99 %s  max %s  mean %s\n",
                static_cast<unsigned long long>(s.count), humanDuration(s.minNs).c_str(),
                humanDuration(s.percentile(50)).c_str(), humanDuration(s.percentile(90)).c_str(),
                humanDuration(s.percentile(99)).c_str(), humanDuration(s.maxNs).c_str(),
                humanDuration(static_cast<uint64_t>(s.meanNs())).c_str());
    if (s.mismatches)
      std::printf("  %llu returns without a seen entry (calls in flight when probes were attached)\n",
                  static_cast<unsigned long long>(s.mismatches));
    if (rep.probeCostNs > 0 && rep.probeCostLowNs > 0)
      std::printf(
          "  the probes cost ~%s to ~%s a call (entry and return: some calls end at an emulated instruction, some at a "
          "stepped one, %s); part of it is inside each time here\n",
          humanDuration(static_cast<uint64_t>(rep.probeCostLowNs)).c_str(),
          humanDuration(static_cast<uint64_t>(rep.probeCostNs)).c_str(), rep.costFigures.c_str());
    else if (rep.probeCostNs > 0)
      std::printf("  the probes cost ~%s a call (entry and return, %s); part of it is inside each time here\n",
                  humanDuration(static_cast<uint64_t>(rep.probeCostNs)).c_str(), rep.costFigures.c_str());
    std::fputs(renderLog2Histogram(s.log2Buckets(rep.unit), histogramUnitName(rep.unit)).c_str(), stdout);
  }

  void function(const FunctionRow& r) override {
    std::cout << (r.signature ? *r.signature : r.name);
    if (r.inlinedInto) std::cout << "  [inlined into " << *r.inlinedInto << " at " << r.file << ":" << r.line << "]";
    if (!r.probe) std::cout << "  [not probe-able: " << r.probeReason << "]";
    else if (r.returnsReason) std::cout << "  [entry only, " << *r.returnsReason << "]";
    std::cout << '\n';
  }

  void targetInfo(const TargetInfo& t) override {
    auto known = [](const std::optional<std::string>& v) { return v ? *v : std::string("unknown"); };
    if (t.pid) std::cout << "pid:            " << *t.pid << '\n';
    std::cout << "executable:     " << t.exe << '\n';
    if (const auto& ns = t.namespaces; ns && (ns->otherMountNs || ns->otherPidNs)) {
      std::cout << "namespaces:     " << (ns->otherMountNs ? "its own mount namespace" : "goscope's mount namespace")
                << (ns->otherPidNs ? ", its own PID namespace" : ", goscope's PID namespace") << " (a container?)\n";
      if (ns->innerPid) std::cout << "pid inside:     " << *ns->innerPid << '\n';
      if (!ns->hostExePath.empty())
        std::cout << "file from here: " << ns->hostExePath << " (the executable path is the one inside)\n";
    }
    std::cout << "go version:     " << known(t.goVersion) << '\n';
    std::cout << "main package:   " << known(t.mainPath) << '\n';
    std::cout << "pie:            " << (t.pie ? "yes" : "no") << '\n';
    if (t.loadBias) std::cout << "load bias:      " << hex(*t.loadBias) << '\n';
    std::cout << "symbols:        " << (t.symtab ? ".symtab" : "stripped") << '\n';
    const bool separate = t.debugInfoSource != "embedded" && t.debugInfoSource != "none";
    if (!t.dwarf) std::cout << "dwarf:          no (BPF path only)\n";
    else if (!separate) std::cout << "dwarf:          yes (signatures, types, Delve)\n";
    else std::cout << "dwarf:          yes, from a separate file (signatures, types; not Delve, which reads only the executable's)\n";
    if (separate) std::cout << "debug info:     " << t.debugInfoPath << " (" << t.debugInfoSource << ")\n";
    std::cout << "pclntab:        Go " << t.pclntabFormat << " format, " << t.functions << " functions\n";
    if (const auto& a = t.arguments)
      std::cout << "arguments:      " << a->dwarf << " typed by DWARF, " << a->method << " by their receiver's method table, "
                << a->receiver << " a typed receiver and the traceback layout, "
                << a->layout << " by the traceback layout (" << a->placed << " with every word placed), "
                << a->noArguments << " take none, " << a->raw << " raw registers\n";
    if (t.goidOffset && t.goidOffsetAssumed)
      std::cout << "runtime.g.goid: offset " << *t.goidOffset << " (" << t.goidOffsetHow << "): goroutine ids may be wrong\n";
    else if (t.goidOffset) std::cout << "runtime.g.goid: offset " << *t.goidOffset << " (" << t.goidOffsetHow << ")\n";
    else std::cout << "runtime.g.goid: not found (" << t.goidOffsetHow << "): goroutine ids may be wrong\n";
    if (const auto& d = t.delve) {
      std::cout << "delve:          " << d->why << '\n';
      if (!d->hint.empty()) std::cout << "                " << d->hint << '\n';
    }
    if (const auto& cut = t.truncated) {
      std::cout << "truncated:      " << cut->fileBytes << " of " << cut->describedBytes << " bytes";
      for (size_t i = 0; i < cut->lost.size(); i++) std::cout << (i ? ", " : "; lost: ") << cut->lost[i];
      std::cout << '\n';
    }
  }

  void doctor(const api::DoctorReport& r) override {
    std::cout << "PID " << r.pid << " (" << r.exe << "): " << r.bytesCompared << " bytes of code in " << r.mappings
              << (r.mappings == 1 ? " mapping" : " mappings") << " compared with the file\n";
    if (r.differing == 0) {
      std::cout << "the code equals the file: nothing to do\n";
      return;
    }
    auto byteHex = [](uint8_t b) {
      char s[4];
      std::snprintf(s, sizeof s, "%02x", b);
      return std::string(s);
    };
    for (const auto& f : r.functions) {
      std::cout << f.name;
      if (f.entry) std::cout << " (" << hex(f.entry) << ")";
      std::cout << ": " << f.bytes.size() << (f.bytes.size() == 1 ? " byte differs\n" : " bytes differ\n");
      for (const auto& b : f.bytes) {
        std::cout << "  " << hex(b.addr) << " (file offset " << hex(b.fileOffset) << "): " << byteHex(b.memory)
                  << ", the file has " << byteHex(b.file);
        if (b.uprobeLink) std::cout << ": a live uprobe (BPF link " << b.uprobeLink << "), left alone";
        else if (b.tracerOwned)
          std::cout << ": an int3 of the live debugger (PID " << r.tracer << ", " << r.tracerName << "), left alone";
        else if (b.int3) std::cout << ": an int3 left behind" << (b.restored ? ", restored" : r.fix ? ", NOT restored" : "");
        else std::cout << ": not an int3, left alone";
        std::cout << '\n';
      }
    }
    std::cout << r.differing << (r.differing == 1 ? " byte differs" : " bytes differ") << ": " << r.int3
              << " leftover int3, " << r.liveUprobe << " live uprobe, ";
    if (r.tracer) std::cout << r.tracerInt3 << " int3 of the live debugger, ";
    std::cout << (r.differing - r.int3 - r.liveUprobe - r.tracerInt3) << " other";
    if (r.tracer) std::cout << "; nothing was changed: PID " << r.tracer << " (" << r.tracerName << ") traces the process";
    else if (r.fix) std::cout << "; " << r.restored << " restored" << (r.stopped ? " (the process was stopped meanwhile)" : "");
    else if (r.int3) std::cout << "; goscope doctor -p " << r.pid << " --fix restores the int3 bytes";
    std::cout << '\n';
  }

  void flush() override {
    lines_.flush();
    std::cout.flush();
    std::fflush(stdout);
  }

  bool open() const override { return static_cast<bool>(std::cout) && !lines_.closed(); }

 private:
  StdoutLines lines_;
  long screens_ = 0;  // top --batch's screens so far
  const int64_t realtimeOffsetNs_ = measureRealtimeOffsetNs();  // at the session's start (output/wall_time.hpp)
};

}  // namespace

std::unique_ptr<Output> makeTextOutput() { return std::make_unique<TextOutput>(); }

}  // namespace goscope::output
