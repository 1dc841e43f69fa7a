// Inlined calls as probe locations: where in its caller's code each inlined
// body of a function starts, chosen so that one hit is one call
// (docs/go-runtime.md, "Inlined calls"). pclntab records every inlined body
// (the inline tree and the pc -> inline index table, Pclntab::inlinedCalls);
// the caller's code, decoded into a control-flow graph, says which body
// instruction every execution of the call passes exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "target/go_binary.hpp"

namespace goscope {

struct InlinedSite {
  std::string callee;                 // the inlined function, e.g. "main.square"
  const GoFunction* caller = nullptr; // the physical function its body is in
  std::string callFile;               // source position of the call
  int callLine = 0;
  // Where to probe (link-time addresses): usually one, the body's first
  // instruction; several when the compiler entered the body from several
  // places (each from outside it). Empty: left out, see reason.
  std::vector<uint64_t> probes;
  std::string reason;  // why these instructions, or why none
  // The caller has not moved SP there (a leaf without a frame): RBP is still
  // its caller's, so a stack walk needs [RSP], the return address, as at an
  // entry (pclntab's pcsp table says).
  bool callerFrameless = false;
};

// Every inlined call, in the whole binary, whose callee's name `wanted`
// accepts, in function-table order. Only the callers that hold one are
// decoded (the whole function: the graph needs every branch).
std::vector<InlinedSite> findInlinedSites(const GoBinary& bin, const std::function<bool(std::string_view)>& wanted);

// The inlined calls of one caller (all of them when wanted is empty).
std::vector<InlinedSite> inlinedSitesIn(const GoBinary& bin, const GoFunction& caller,
                                        const std::function<bool(std::string_view)>& wanted = {});

// The pure placement rule, on a decoded caller and one inlined call's body
// (its pc ranges and those of the calls inlined into it): fills probes or
// reason. parentPc is the inline tree's "instruction at the call site".
void placeInlinedProbe(const FunctionCode& code, std::span<const uint8_t> bytes,
                       const std::vector<std::pair<uint64_t, uint64_t>>& body, uint64_t parentPc, InlinedSite& site);

}  // namespace goscope
