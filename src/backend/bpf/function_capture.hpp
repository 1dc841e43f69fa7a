// How one probed function's arguments and results are found (its value
// layout, from DWARF or a user signature) and read (the capture plan its
// probes carry). The BPF event session configures probes with it and decodes
// their events with it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/abi_layout.hpp"
#include "probe/argument_sources.hpp"
#include "probe/filter_expr.hpp"
#include "probe/method_signature.hpp"
#include "probe/traceback_layout.hpp"
#include "backend/bpf/capture_plan.hpp"
#include "binary/go_binary.hpp"
#include "value/value.hpp"

namespace goscope {

struct FunctionTrace {
  ArgumentsFrom from = ArgumentsFrom::None;  // None also when the types did not plan (`raw`)
  std::vector<ValueLayout> layout;  // empty with `raw`; with `traceback`, its words
  CapturePlan plan;
  bool raw = false;                 // no DWARF, no signature, no traceback layout: raw argument registers
  // No DWARF, no signature: the runtime's traceback layout of the arguments
  // (Go 1.17+), its words in `layout`. No results: the binary does not say
  // how many result words a function returns in registers.
  std::optional<TracebackLayout> traceback;
  bool argsMore = false;  // with `traceback`: its layout stops after the words shown (`...`)
  // No DWARF, no signature, but a method whose types its receiver's method
  // table gives (probe/method_signature.hpp): the signature inferred, or why
  // it was not trusted.
  std::string inferred;
  std::string inferenceRefused;
};

// `signatures`: user signatures by function name (for stripped binaries).
// Where the types come from: probe/argument_sources.hpp. `graph`: the
// binary's runtime type records, shared by the functions of one session
// (null: one of its own).
FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts, RuntimeTypeGraph* graph = nullptr);

// --filter bound to one function's arguments (as its trace names them).
// Errors (Usage): the function's arguments have no names (no DWARF, no
// signature), or bindFilter's.
Result<std::vector<BoundFilterTerm>> filterFor(const FunctionTrace& t, const FilterExpr& filter, const std::string& func);

// The decoded words of a traceback layout (decodeArgValues of t.layout) put
// back into the runtime's grouping, into `out`; `more` says the layout stops
// after the arguments given. A typed receiver is words[0], kept as it is.
void groupWords(const TracebackLayout& t, std::vector<Value>& words, std::vector<Value>& out, bool& more);

// Parameters the compiler adds (the generic dictionary `.dict`) and `_` are
// not the user's arguments: they are not shown.
bool hiddenParameter(const std::string& name);

}  // namespace goscope
