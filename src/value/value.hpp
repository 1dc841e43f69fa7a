// goscope's one value model: a Go value as every path produces it — decoded
// from the bytes a BPF probe copied, converted from a Variable Delve loaded,
// or read straight from a process's memory — and as every output prints it
// (value/render.hpp). A value says what it could not see ("unavailable" with
// the reason) instead of guessing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace goscope {

struct Value {
  enum class Kind {
    Bool,
    Int,            // every signed integer kind (int, int8 ... int64)
    Uint,           // every unsigned integer kind, uintptr included
    Float,          // float32, float64
    Complex,        // complex64, complex128
    String,
    Pointer,        // *T: `children` holds the pointee when it was followed
    UnsafePointer,  // unsafe.Pointer
    Struct,         // `children` are the fields, each with its `name`
    Array,          // `children` are the elements shown (`len` in all)
    Slice,          // `children` are the elements shown (`len`, `cap`)
    Map,            // `children` alternate key, value (`len` entries in all)
    Interface,      // `dynamicType`; `children` holds the dynamic value when known
    Chan,           // `len` (queued) and `cap` when known
    Func,           // `text`: the function's name, when known
    // Argument words as the runtime's traceback layout groups them, with no
    // types (a stripped binary, no signature): `children` are words (uintptr)
    // and groups; `more`: the layout stops after them.
    Group,
    Unavailable,    // not seen: `unavailable` says why (float in X0, not captured, unreadable: EFAULT)
  };

  Kind kind = Kind::Unavailable;
  std::string name;  // a struct field's name, an argument's name; empty for elements
  std::string type;  // the Go type: "int", "main.Point", "[]string", "*main.Server"; may be empty

  // Scalars.
  bool boolean = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0, imag = 0;
  std::string text;  // String: the bytes read (maybe fewer than `len`); Func: its name

  // Where the value points (Pointer, UnsafePointer, Map, Chan, Func, and an
  // Interface's data word); 0 with `nil`.
  uint64_t address = 0;
  bool nil = false;

  // Sizes: a String's full length in bytes; the length of an Array, Slice,
  // Map or Chan; a Slice's or Chan's capacity.
  uint64_t len = 0;
  uint64_t cap = 0;

  std::vector<Value> children;

  // Interface: the dynamic type's name when it was resolved, and the error
  // message of an `error` whose text was captured.
  std::string dynamicType;
  std::optional<std::string> errorText;
  uint64_t errorTextMissing = 0;  // bytes of errorText not captured

  // Cut: not loaded beyond its path's depth (Delve's MaxVariableRecurse, the
  // direct read's). Any kind but Slice and Unavailable prints {…} (a struct
  // main.T{…}), never nil; `address` is then where the value itself lives
  // (0: unknown), a Map's `len` the entries counted. Slice: its elements
  // were not shown. Unavailable: past the BPF decoder's depth.
  bool elided = false;
  // Array, Slice, Map: elements exist but were not captured at all (why).
  std::string elementsUnavailable;

  std::string unavailable;  // Kind::Unavailable: why
  bool more = false;        // Group: the runtime's layout describes no more words after `children`

  static Value missing(std::string why, std::string name = {}) {
    Value v;
    v.kind = Kind::Unavailable;
    v.unavailable = std::move(why);
    v.name = std::move(name);
    return v;
  }
};

}  // namespace goscope
