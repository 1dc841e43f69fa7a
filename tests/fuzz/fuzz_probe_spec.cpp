// Fuzz target: what a user types to name functions, as goscope parses it.
// Input: `<spec>` or `<spec>\n<function name>`. The spec goes through every
// parser a probe spec can reach: Pattern::parse (literal, glob, /regex/),
// parseUserSignature and layoutFromSignature (the signature of a stripped
// binary's function, `main.add(x int, y int) int`); the pattern is matched
// against the given name and a few real Go names.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "probe/abi_layout.hpp"
#include "probe/pattern.hpp"
#include "probe/signature_parse.hpp"

using namespace goscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nl = in.find('\n');
  std::string_view spec = in.substr(0, nl);
  std::string_view name = nl == std::string_view::npos ? std::string_view("main.(*Server).Handle") : in.substr(nl + 1);

  if (auto p = Pattern::parse(spec)) {
    (void)p->matches(name);
    for (std::string_view real : {"main.main", "main.Map[go.shape.int_0,go.shape.string_1]",
                                  "runtime.gcMarkDone", "main.(*Stack[go.shape.int_0]).Push"})
      (void)p->matches(real);
  }
  (void)globMatch(spec, name);
  (void)goPrintName(name);

  if (auto sig = parseUserSignature(spec)) {
    // Every parameter the parser accepted has a name and a type.
    for (const auto& param : sig->params)
      if (param.name.empty() || param.type.empty()) __builtin_trap();
  }
  if (auto layout = layoutFromSignature(spec))
    for (const auto& v : *layout) (void)describeLayout(v);
  return 0;
}
