// session::Call (api::Call): one call of a probed function, as an event session delivers it
// — from a BPF probe (arguments at the entry, results and duration at the
// return) or a Delve breakpoint (arguments, expressions and locals at the
// entry) — in goscope's own value model, so one output layer prints both.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "value/value.hpp"

namespace goscope::session {

struct Frame {
  uint64_t pc = 0;  // runtime pc (0 when the path does not give it)
  std::string function;
  std::string file;
  int64_t line = 0;
  bool known = false;    // false: outside the executable (vdso, C code): only the pc is known
  bool inlined = false;  // an inlined call inside the frame below it
};

// The integer argument registers of Go's register ABI, in order.
inline constexpr std::array<const char*, 9> kArgumentRegisters = {"rax", "rbx", "rcx", "rdi", "rsi",
                                                                  "r8",  "r9",  "r10", "r11"};

struct Call {
  std::string function;
  std::string file;  // where the function is (its entry's source line)
  int64_t line = 0;
  uint32_t pid = 0;
  int64_t goid = 0;
  // CLOCK_MONOTONIC of the entry. (A call already running when the probes
  // were attached is no Call: only its return would be seen.)
  uint64_t tsNs = 0;
  std::optional<uint64_t> durationNs;  // when both the entry and the return were seen

  std::vector<Value> args;  // named, in order; the compiler's hidden parameters left out
  // Arguments as the runtime's traceback layout gives them (a stripped
  // binary, no signature): `args` are unnamed words and groups
  // (Value::Kind::Group), printed by position; `argsMore`: the layout
  // describes no more words after them (`...`).
  bool argsPositional = false;
  bool argsMore = false;
  // Why there are no arguments at all ("inlined": the call's body was
  // inlined, its arguments were never in registers); empty otherwise.
  std::string argsUnavailable;
  // The function the call's body was inlined into (file:line above are then
  // the call's position in it), when it was.
  std::optional<std::string> inlinedInto;
  // Named or not (`~r0`), in order; nullopt when this path does not capture
  // results (a Delve breakpoint stops at the entry, before they exist).
  std::optional<std::vector<Value>> results;
  // A function goscope has no layout for (stripped, no signature given): the
  // argument registers at the entry and RAX at the return, raw.
  std::optional<std::array<uint64_t, 9>> argRegisters;
  std::optional<uint64_t> resultRegister;

  std::vector<Value> exprs;   // break EXPR...: evaluated at the hit (Delve)
  std::vector<Value> locals;  // break --locals (Delve)
  std::vector<Frame> stack;   // innermost first, when asked for
  // The stack goes deeper than was recorded (the kernel keeps 127 user
  // frames; Delve: the depth asked): the outermost frames are missing.
  bool stackCut = false;
};

}  // namespace goscope::session
