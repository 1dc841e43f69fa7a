// How one probed function's arguments and results are found (its value
// layout, from DWARF or a user signature) and read (the capture plan its
// probes carry). The BPF event session configures probes with it and decodes
// their events with it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "probe/abi_layout.hpp"
#include "probe/filter_expr.hpp"
#include "backend/bpf/capture_plan.hpp"
#include "target/go_binary.hpp"

namespace goscope {

struct FunctionTrace {
  std::vector<ValueLayout> layout;  // empty with `raw`
  CapturePlan plan;
  bool raw = false;                 // no DWARF, no signature: raw argument registers
};

// `signatures`: user signatures by function name (for stripped binaries).
FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts);

// --filter bound to one function's arguments (as its trace names them).
// Errors (Usage): the function's arguments have no names (no DWARF, no
// signature), or bindFilter's.
Result<std::vector<BoundFilterTerm>> filterFor(const FunctionTrace& t, const FilterExpr& filter, const std::string& func);

// Parameters the compiler adds (the generic dictionary `.dict`) and `_` are
// not the user's arguments: they are not shown.
bool hiddenParameter(const std::string& name);

}  // namespace goscope
