// Text lines for people. Each line is flushed where hits are rare (break,
// sample) so it shows at once; trace's lines are buffered.
#include <cstdio>
#include <iostream>

#include "output/call_parts.hpp"
#include "output/clock_text.hpp"
#include "output/histogram_text.hpp"
#include "output/outputs.hpp"
#include "value/render.hpp"

namespace goscope::output {

namespace {

// "g1 main.mayPanic(i=7) funcs.go:287 | main.counter=5 | locals: ... | stack: f file:line <- ..."
std::string hitText(const api::Call& c, const HitShape& shape) {
  std::string out = "g" + std::to_string(c.goid) + " " + c.function;
  if (shape.args) out += "(" + (c.argRegisters ? registersText(*c.argRegisters) : assignments(c.args, ", ")) + ")";
  out += " " + baseName(c.file) + ":" + std::to_string(c.line);
  if (shape.exprs) out += " | " + assignments(c.exprs, " ");
  if (shape.locals) out += " | locals: " + assignments(c.locals, " ");
  if (shape.stack > 0) {
    out += " | stack:";
    for (size_t i = 0; i < c.stack.size() && i < static_cast<size_t>(shape.stack); ++i)
      out += std::string(i ? " <-" : "") + " " + shortFrameText(c.stack[i]);
  }
  return out;
}

class TextOutput final : public Output {
 public:
  void traceCall(const api::Call& c, bool stack) override {
    std::string args = !c.entrySeen ? "?" : c.argRegisters ? registersText(*c.argRegisters) : assignments(c.args, ", ");
    std::string line = wallClock() + " pid=" + std::to_string(c.pid) + " goid=" + std::to_string(c.goid) + " " +
                       c.function + "(" + args + ")";
    std::string results = c.resultRegister ? registersText({*c.resultRegister}, 1)
                          : c.results      ? assignments(*c.results, ", ", true)
                                           : std::string();
    if (!results.empty()) line += " = " + results;
    if (c.durationNs) line += "  [" + humanDuration(*c.durationNs) + "]";
    std::cout << line << '\n';
    if (stack && c.entrySeen)
      for (const auto& f : c.stack) std::cout << "    " << frameText(f) << '\n';
  }

  void breakHit(const api::Call& c, long long, const HitShape& shape) override {
    std::cout << clockText(std::chrono::system_clock::now()) << ' ' << hitText(c, shape) << std::endl;
  }

  void sample(const Sample& s, const HitShape& shape) override {
    char pause[48];
    std::snprintf(pause, sizeof pause, " | pause %.1f ms", s.pauseMs);
    const std::string now = clockText(std::chrono::system_clock::now());
    if (s.call) {
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

  bool open() const override { return static_cast<bool>(std::cout); }
};

}  // namespace

std::unique_ptr<Output> makeTextOutput() { return std::make_unique<TextOutput>(); }

}  // namespace goscope::output
