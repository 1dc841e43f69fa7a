#include "rpc/delve_errors.hpp"

#include <regex>
#include <string>

namespace goscope::rpc {

namespace {

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// dlv's messages may end in a newline ("could not find function X\n") or
// carry a Go stack (internal errors): keep the first line.
std::string firstLine(std::string_view s) {
  while (!s.empty() && (s.front() == '\n' || s.front() == ' ')) s.remove_prefix(1);
  return std::string(s.substr(0, s.find('\n')));
}

}  // namespace

// Messages as Delve 1.20.2 words them (fixtures/delve/*.reply.json).
Error delveError(std::string_view method, std::string_view message) {
  const std::string line = firstLine(message);
  const std::string text = "Delve " + std::string(method) + ": " + line;
  if (has(line, "has exited with status")) {  // "Process 123 has exited with status 0"
    return {ErrorKind::TargetGone, "the target exited during the session (" + line + ")", {}};
  }
  if (has(line, "could not find symbol value for") || has(line, "could not find function") ||
      (has(line, "location \"") && has(line, "\" not found")) || has(line, "no breakpoint with")) {
    return {ErrorKind::NoMatch, text, "check the spelling and qualify names with their package (main.counter, main.doWork)"};
  }
  // `main.nosuch` resolves `main` to the function main.main first.
  if (has(line, "is not a struct") && has(line, "(type func")) {
    return {ErrorKind::NoMatch, text + ", so there is no package variable of that name",
            "qualify it with its package path, e.g. main.counter"};
  }
  if (has(line, "Breakpoint exists at")) {
    return {ErrorKind::Usage, text, "one breakpoint per location: clear the existing one first"};
  }
  // go/parser positions: "1:15: expected operand, found 'EOF'".
  static const std::regex kParse(R"(^\d+:\d+: )");
  if (std::regex_search(line, kParse)) {
    return {ErrorKind::Usage, "Delve cannot parse the expression: " + line, "expressions use Go syntax (see Delve's expr docs)"};
  }
  // Set of a string (or anything needing memory in the target): Delve 1.20
  // would have to call into the target to allocate, which Set never does.
  if (has(line, "can not be allocated because function calls are not allowed")) {
    return {ErrorKind::Usage, text, "Delve can write numbers, bools and pointers in place, not new strings or slices"};
  }
  // A --cond that calls a function: Delve parses it when the breakpoint is
  // made and refuses it only at the first hit, from Command (not exit 7,
  // as if dlv had failed). An expression error is the user's: exit 2.
  if (has(line, "function calls not allowed")) {
    return {ErrorKind::Usage, "Delve cannot evaluate the expression: " + line,
            "a condition cannot call functions: Delve runs no code in the target at a breakpoint; compare "
            "variables and fields"};
  }
  if (has(line, "error evaluating expression")) {
    return {ErrorKind::Usage, "Delve cannot evaluate the expression: " + line, {}};
  }
  // A panic inside Delve (recovered by its RPC server): not the user's
  // expression, Delve's own failure, for example on a runtime layout it
  // does not expect.
  if (has(line, "Internal debugger error")) {
    return {ErrorKind::External, text, "Delve failed inside; its message is above"};
  }
  if (method == "Eval" || method == "Set") {
    return {ErrorKind::Usage, text, {}};
  }
  return {ErrorKind::External, text, {}};
}

}  // namespace goscope::rpc
