// Where trace would type each function's arguments from, over a whole
// binary (goscope info --arguments): DWARF, the receiver's method table, the
// runtime's traceback layout (with every word placed or not), nothing to
// type (no arguments), or nothing at all (raw registers: assembly, Go 1.16).
// The same order of sources as backend/bpf/function_capture's traceFor.
#pragma once

#include <cstddef>

namespace goscope {

class GoBinary;

struct ArgumentSources {
  size_t functions = 0;
  size_t dwarf = 0;        // DWARF describes it
  size_t method = 0;       // its receiver's method table, checked against its layout
  size_t layout = 0;       // the traceback layout...
  size_t placed = 0;       // ...with every word placed (a subset of `layout`)
  size_t noArguments = 0;  // a Go function that takes none
  size_t raw = 0;          // none of these: raw registers
};

ArgumentSources argumentSources(const GoBinary& bin);

}  // namespace goscope
