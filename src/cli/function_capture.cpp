#include "cli/function_capture.hpp"

#include "output/hex.hpp"

namespace goscope::cli {

FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts) {
  FunctionTrace t;
  Result<std::vector<ValueLayout>> layout = fail(ErrorKind::NoMatch, "");
  if (auto it = signatures.find(fn.name); it != signatures.end()) {
    layout = layoutFromSignature(it->second);
  } else if (const DwarfInfo* d = bin.dwarf()) {
    if (const DwarfFunction* df = d->functionAt(fn.entry)) layout = layoutFunction(*d, *df, fn.args);
  }
  if (!layout) {
    t.raw = true;
    return t;
  }
  auto plan = planCaptures(*layout, copts);
  if (!plan) {
    t.raw = true;
    return t;
  }
  t.layout = std::move(*layout);
  t.plan = std::move(*plan);
  return t;
}

bool hidden(const std::string& name) { return name.empty() || name[0] == '.' || name == "_"; }

std::string valuesText(const std::vector<DecodedValue>& vals, bool results) {
  std::string s;
  for (const auto& v : vals) {
    if (!results && hidden(v.name)) continue;
    if (!s.empty()) s += ", ";
    if (!results || !v.name.starts_with("~r")) s += v.name + "=";
    s += v.text;
  }
  return s;
}

boost::json::object valuesObject(const std::vector<DecodedValue>& vals) {
  boost::json::object o;
  for (const auto& v : vals)
    if (!hidden(v.name)) o[v.name] = v.json;
  return o;
}

boost::json::array valuesArray(const std::vector<DecodedValue>& vals) {
  boost::json::array a;
  for (const auto& v : vals) a.push_back(v.json);
  return a;
}

std::string rawRegs(const bpf::Event& e, size_t n) {
  static const char* names[] = {"rax", "rbx", "rcx", "rdi", "rsi", "r8", "r9", "r10", "r11"};
  std::string s;
  for (size_t i = 0; i < n && i < e.regs.size(); i++) s += (i ? ", " : "") + std::string(names[i]) + "=" + hex(e.regs[i]);
  return s;
}

boost::json::object rawRegsJson(const bpf::Event& e) {
  return boost::json::object{{"rax", e.regs[0]}, {"rbx", e.regs[1]}, {"rcx", e.regs[2]}, {"rdi", e.regs[3]}};
}

}  // namespace goscope::cli
