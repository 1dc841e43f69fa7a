#include "backend/bpf/function_capture.hpp"

namespace goscope {

FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts) {
  FunctionTrace t;
  Result<std::vector<ValueLayout>> layout = fail(ErrorKind::NoMatch, "");
  if (auto it = signatures.find(fn.name); it != signatures.end()) {
    layout = layoutFromSignature(it->second, namedTypeKindsIn(bin));
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

Result<std::vector<BoundFilterTerm>> filterFor(const FunctionTrace& t, const FilterExpr& filter, const std::string& func) {
  if (t.raw)
    return fail(ErrorKind::Usage, "filter: " + func + "'s arguments have no names here (no DWARF, no signature)",
                "give its signature, e.g. goscope trace 'main.add(x int, y int) int' --filter 'x > 40'");
  return bindFilter(filter, t.layout, func);
}

bool hiddenParameter(const std::string& name) { return name.empty() || name[0] == '.' || name == "_"; }

}  // namespace goscope
