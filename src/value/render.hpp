// The one renderer of goscope values, for people (Go-like text) and for
// programs (JSON), whichever path produced the value:
//
//   42  true  1.5                  integers, bools, floats (Go's strconv 'g' form, as Delve prints)
//   0x4a5f20                       a uintptr (an address or a handle, read as one): JSON a number
//   "hello"  "abc…"(+90 bytes)     strings, truncated at the capture cap; JSON "hello", and a
//                                  cut one {"cut":true,"type":"string","len":93,"value":"abc"}
//   []int{len=3 cap=4: 1, 2, 3}    slices: JSON {"len":3,"cap":4,"elems":[1,2,3]}; nil: []int(nil), JSON null;
//                                  fewer elements shown than len, or none (past the depth):
//                                  "cut":true added; none readable: "elems_unavailable":"why"
//   [3]int{1, 2, 3}                arrays: JSON [1,2,3]; fewer shown than it has:
//                                  {"cut":true,"type":"[64]uint8","len":64,"elems":[...]}
//   main.Point{X: 1, Y: 2}         structs: JSON {"X":1,"Y":2}
//   main.T{…}  {…}                 cut: not loaded past the path's depth (a struct, anything
//                                  else); never nil. JSON {"cut":true,"type":"*main.Conn",
//                                  "addr":"0x…"} (addr: where the value lives, when known;
//                                  "len" for a map's entries); a map also prints
//                                  map[K]V{len=3: …}. io.Reader(*main.Conn){…} is a live
//                                  interface whose dynamic value was cut.
//   &main.Server{Name: "api"}      a pointer whose target was read: JSON {"addr":"0x…","value":{…}}
//   0xc000012345  nil              other pointers (JSON "0xc000012345"), nil (JSON null)
//   map[string]int{len=2: "a": 1, "b": 2}   maps: JSON an object keyed by the key's text; fewer
//                                  entries shown than len: {"cut":true,"type":T,"len":N,"elems":{...}}
//   error(*errors.errorString)0xc000010250 "not found"
//   error(*errors.errorString)&errors.errorString{s: "not found"}
//                                  interfaces: dynamic type, then the dynamic value when it was
//                                  read (Delve) or its address and the error text (BPF);
//                                  JSON {"type":"*errors.errorString","value":…,"error":"not found"}
//                                  (a message cut at the cap: "error_cut":true,"error_len":N)
//   chan int{len=0 cap=4}          channels: JSON {"len":0,"cap":4}
//   {0x2a, {0x4b2c10, 0x2}, ...}   argument words grouped as Go's traceback groups them (no
//                                  types known): JSON [42,[4926480,2],"..."]
//   <unavailable: float in X0>     what a path cannot see: JSON null, never a wrong value
//   <not captured>  <unreadable: EFAULT>
//
// Addresses are hex strings in JSON, as everywhere in goscope's output.
#pragma once

#include <boost/json.hpp>

#include <string>

#include "value/value.hpp"

namespace goscope {

std::string renderText(const Value& v);
boost::json::value renderJson(const Value& v);

// The same bytes, appended to `out` (the output's line buffer): trace prints
// a line per call, and building strings and Boost.JSON trees per value cost
// more than the rest of the reading side. Scalars, strings,
// pointers, structs, arrays and slices are written straight into `out`;
// other kinds (and any string that needs escaping) go through renderText /
// jsonText(renderJson) so every byte stays the same.
void appendText(const Value& v, std::string& out);
void appendJson(const Value& v, std::string& out);
// A JSON string literal as Boost.JSON serializes it.
void appendJsonString(std::string_view s, std::string& out);

// Go's strconv.FormatFloat(f, 'g', -1, bits): the shortest digits that
// round-trip, in %e form only for exponents below -4 or from 21 up.
std::string goFloat(double f, int bits = 64);

}  // namespace goscope
