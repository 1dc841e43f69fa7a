// Fuzz target: DWARF location expressions, the bytes goscope decodes itself
// (Go writes them as DW_FORM_block1, which libdw refuses in DWARF 4 units).
// Input: byte 0's low bit = frameBaseIsCfa, byte 1 = a value size to check
// coverage against; the rest is the expression.
#include <cstddef>
#include <cstdint>
#include <span>

#include "binary/dwarf_location.hpp"

using namespace goscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  bool frameBaseIsCfa = data[0] & 1;
  uint64_t valueSize = data[1];
  std::span<const uint8_t> expr(data + 2, size - 2);

  auto ops = parseExpression(expr);
  // Every op consumes at least its atom byte.
  if (ops.size() > expr.size()) __builtin_trap();
  auto pieces = decodeLocation(ops, frameBaseIsCfa);
  (void)coversExactly(pieces, valueSize);
  (void)describe(pieces);
  for (const auto& p : pieces) (void)p.regName();
  return 0;
}
