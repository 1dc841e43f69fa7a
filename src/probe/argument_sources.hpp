// Where a function's argument (and result) types come from, decided in one
// place for trace (backend/bpf/function_capture), list and info --arguments:
//   given      a signature the user wrote (a stripped binary);
//   dwarf      the binary's DWARF;
//   interface  its receiver's method table: a method the program can reach
//              through an interface or reflection (probe/method_signature),
//              checked against its traceback layout;
//   receiver   a method the binary keeps no types of, whose receiver's named
//              type it describes: the receiver typed from that record, the
//              other arguments by the traceback layout;
//   layout     the runtime's traceback layout (Go 1.17+): words, grouped,
//              placed from the function's code (probe/traceback_layout);
//   none       nothing: raw registers (assembly; Go 1.16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/abi_layout.hpp"
#include "probe/traceback_layout.hpp"
#include "binary/runtime_type_graph.hpp"

namespace goscope {

class GoBinary;
struct GoFunction;

enum class ArgumentsFrom : uint8_t { Given, Dwarf, Interface, Receiver, Layout, None };
// "given", "dwarf", "interface", "receiver", "layout", "none" (list --json's signature_from).
const char* argumentsFromName(ArgumentsFrom from);

struct FunctionArguments {
  ArgumentsFrom from = ArgumentsFrom::None;
  // Given, Dwarf, Interface: the values' layout (a signature that does not
  // lay out: None, and `problem` says why). Layout: one value per word.
  // Receiver: the receiver's value, then one value per word after it.
  std::vector<ValueLayout> layout;
  std::optional<TracebackLayout> traceback;  // Layout, Receiver; empty `args`: the function takes no arguments
  std::string inferred;                      // Interface: the signature, as list prints signatures
  std::string inferenceRefused;              // why the method table's signature was not used
  std::string problem;                       // Given or Dwarf that did not lay out
};

// `signatures`: the user's, by function name. `graph`: the binary's runtime
// type records, shared by the functions of one command (it indexes them once).
// `sourceOnly` (list): DWARF's layout is not computed and the traceback
// layout's words are not placed (no disassembly), only the source decided.
FunctionArguments argumentsOf(const GoBinary& bin, const GoFunction& fn,
                              const std::map<std::string, std::string>& signatures, RuntimeTypeGraph& graph,
                              bool sourceOnly = false);

struct ArgumentSources {
  size_t functions = 0;
  size_t dwarf = 0;        // DWARF describes it
  size_t method = 0;       // its receiver's method table, checked against its layout
  size_t receiver = 0;     // its receiver's named type, the rest by the traceback layout
  size_t layout = 0;       // the traceback layout...
  size_t placed = 0;       // ...with every word placed (a subset of `layout`)
  size_t noArguments = 0;  // a Go function that takes none
  size_t raw = 0;          // none of these: raw registers
};

// The arguments as list prints a traceback layout: "({w, w}, w)", or with a
// typed receiver "(recv main.Point, w)".
std::string layoutText(const TracebackLayout& t);

// Over every function of the binary (goscope info --arguments).
ArgumentSources argumentSources(const GoBinary& bin);

}  // namespace goscope
