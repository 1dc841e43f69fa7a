// What trace and break's BPF plan share: how one function's arguments and
// results are found (its value layout, from DWARF or a user signature) and
// read (the capture plan the probes carry), and how decoded values print.
#pragma once

#include <boost/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "backend/bpf/event.hpp"
#include "output/value_format.hpp"
#include "probe/abi_layout.hpp"
#include "probe/capture_plan.hpp"
#include "target/go_binary.hpp"

namespace goscope::cli {

// How one traced function's values are found and read.
struct FunctionTrace {
  std::vector<ValueLayout> layout;  // empty with `raw`
  CapturePlan plan;
  bool raw = false;                 // no DWARF, no signature: raw argument registers
  std::string note;                 // why values are missing, once per function
};

// `signatures`: user signatures by function name (for stripped binaries).
FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts);

// Hidden parameters (the dictionary, `_`) are not printed as arguments.
bool hidden(const std::string& name);
// "x=1, s=\"a\"" (results: "3, <nil>", named ones "n=3").
std::string valuesText(const std::vector<DecodedValue>& vals, bool results);
boost::json::object valuesObject(const std::vector<DecodedValue>& vals);
boost::json::array valuesArray(const std::vector<DecodedValue>& vals);
// The first `n` argument registers, for functions without a layout.
std::string rawRegs(const bpf::Event& e, size_t n);
boost::json::object rawRegsJson(const bpf::Event& e);

}  // namespace goscope::cli
