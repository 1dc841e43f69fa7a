// From user patterns to the functions and addresses the BPF path attaches:
// each matched function's entry probe (placed by the disassembler) and,
// when returns are needed, every RET that is safe to probe.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/bpf/probe_config.hpp"
#include "probe/pattern.hpp"
#include "binary/go_binary.hpp"
#include "util/result.hpp"

namespace goscope {

// What the session needs of a chosen function: its entry probe's place and
// kind (its cost per hit). Not the whole FunctionCode: 80,000 of those were
// ~25 MB that nothing read (peak RSS).
struct SelectedFunction {
  const GoFunction* fn = nullptr;
  ProbeSite::Kind probeKind = ProbeSite::Kind::None;
  uint64_t probeAddress = 0;  // the chosen site (the jbe or the entry; the first call site), before --entry
  uint32_t probeId = 0;
  // Inlined bodies of this function probed too (SiteKind::Inlined points
  // with the same probe id: the count sums the calls at the entry and at
  // every inlined site, docs/go-runtime.md "Inlined calls").
  size_t inlinedSites = 0;
  // The name has no function of its own (every call was inlined): fn is a
  // stand-in whose entry is 0 and whose file:line is the first call site.
  bool inlinedOnly = false;
  size_t callSites = 0;       // probeKind CallSites: how many `call`s are probed
  // CallSites with returns: the kernel emulates the instruction after every
  // call, so a call's end costs an emulated hit, not a stepped RET.
  bool callEndsEmulated = false;
  // Some calls end at an emulated instruction and some at a stepped one: a
  // call costs between the two prices (cost_meter.hpp, CallCost).
  bool callEndsMixed = false;
};

struct Selection {
  std::vector<SelectedFunction> functions;  // probe id = index
  std::vector<bpf::AttachPoint> points;
  size_t skippedUnsafe = 0;  // matched, but no safe entry: left out (listed by `list --all`)
  // Matched with returns wanted, but the function does not decode to its end,
  // so its RETs are not all known (list shows returns_reason): left out.
  size_t skippedReturnsUnknown = 0;
  std::string returnsUnknownExample;  // "name: reason" of the first
  // With SelectionOptions::inlined: bodies matched but left out (no
  // instruction runs exactly once per call), and the first one's reason.
  size_t inlinedLeftOut = 0;
  std::string inlinedLeftOutExample;
  // The stand-in GoFunctions of inlinedOnly functions (stable addresses).
  std::vector<std::unique_ptr<GoFunction>> standIns;
  // Writes the analysis cache's record beside the attach, when a search
  // added to it; joined when the Selection goes. It reads the binary: keep
  // the GoBinary alive longer than the Selection.
  std::jthread analysisSave;
};

// SelectionOptions::inlinedRefusal for a --filter: why its inlined bodies are left out.
inline constexpr const char* kFilterInlined =
    "--filter tests arguments, which a body inlined into another function does not have in registers";

struct SelectionOptions {
  bool returns = false;  // attach every RET too (latency, results)
  // Probe the function's first instruction even where the stack check's jbe
  // is cheaper (the overhead demo compares the two); falls back to the
  // chosen site when the first instruction is not safe to probe.
  bool plainEntry = false;
  // A pattern that matches no function while others do is an error (NoMatch,
  // naming it: a misspelled second spec must not be dropped silently), unless
  // this says to go on without it.
  bool ignoreMissing = false;
  // Also probe every inlined body of a matched name, at the instruction
  // binary/inline_sites.hpp chooses: count, trace and break (entries only;
  // latency needs a RET, which an inlined body does not have).
  bool inlined = false;
  // Set: the inlined bodies matched are left out with this reason (counted
  // in Selection::inlinedLeftOut, said in the attach line): --filter tests
  // arguments, which an inlined body does not have in registers.
  std::string inlinedRefusal;
  // A function whose entry would be single-stepped is probed at its call
  // sites (SiteKind::Call; for a count alone SiteKind::Entry, all the program
  // needs there) when call_sites.hpp proves every call goes through them. With `returns` (latency, trace) each call also ends at the
  // instruction after it (SiteKind::CallReturn), where callReturnRefusal
  // allows; else the entry and its RETs. The BPF program reports the entry's
  // RSP and the return address there, so arguments (stack-passed ones too),
  // results, goroutine and frame read as at the entry. Stacks keep the entry
  // (a call site's stack lacks the function's own frame): callers leave this
  // false for --stack, and for break.
  bool callSites = false;
};

// Errors: NoMatch when no pattern matches a probe-able function (the message
// names unsafe matches when that is why, and a function whose RETs are
// unknown when returns are wanted).
Result<Selection> selectFunctions(const GoBinary& bin, const std::vector<Pattern>& patterns,
                                  const SelectionOptions& options, const std::string& targetName);

}  // namespace goscope
