// Decoding the arguments and results of one probe hit (a bpf::Event) with the
// function's layouts and capture plan, into Go-like text and typed JSON:
//
//   42                          integers (JSON numbers, uint64 exact)
//   true                        bool
//   "hello"  "abc…"(+90 bytes)  strings, truncated at the capture cap
//   []int{len=3 cap=4: 1, 2, 3} slices: JSON {"len":3,"cap":4,"elems":[1,2,3]}
//   main.Point{X: 1, Y: 2}      structs: JSON {"X":1,"Y":2}
//   &main.Server{Name: "api"}   a pointer whose target was captured: JSON {"addr":"0x…","value":{…}}
//   0xc000012345                other pointers (JSON "0xc000012345"); nil: JSON null
//   error(*errors.errorString)0xc000010250 "not found"
//                               interfaces: JSON {"type":"*errors.errorString","value":"0x…","error":"not found"}
//   <unavailable: float in X0>  what BPF cannot see (XMM registers): JSON null, never a wrong value
//   <not captured>              what the per-site read budget left out: JSON null
//   <unreadable: EFAULT>        a failed user-memory read: JSON null
//
// Addresses are hex strings in JSON, as everywhere in goscope's output.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "backend/bpf/event.hpp"
#include "probe/abi_layout.hpp"
#include "backend/bpf/capture_plan.hpp"
#include "probe/type_names.hpp"
#include "value/value.hpp"

namespace goscope {

struct DecodedValue {
  std::string name;  // as in the layout: `x`, `~r0`
  std::string text;
  boost::json::value json;
  Value value;
};

// The arguments (an entry event) or the results (a return event) of one call,
// in layout order. `layout` and `plan` are those the probe was configured with.
std::vector<DecodedValue> decodeArgs(const bpf::Event& event, const std::vector<ValueLayout>& layout,
                                     const CapturePlan& plan, const TypeNamer& types);
std::vector<DecodedValue> decodeResults(const bpf::Event& event, const std::vector<ValueLayout>& layout,
                                        const CapturePlan& plan, const TypeNamer& types);

// The same values without their text and JSON (the output renders them),
// into `out` (cleared first; its capacity is kept: trace decodes into the
// same vectors call after call). dropHidden: leave out the compiler's hidden
// parameters (hiddenParameter, function_capture.hpp).
void decodeArgValues(const bpf::Event& event, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                     const TypeNamer& types, std::vector<Value>& out, bool dropHidden);
void decodeResultValues(const bpf::Event& event, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                        const TypeNamer& types, std::vector<Value>& out);

}  // namespace goscope
