#include "backend/bpf/uprobe_hazards.hpp"

namespace goscope::bpf {

std::string uprobeHazard(std::span<const uint8_t> bytes) {
  const uint8_t* b = bytes.data();
  size_t n = bytes.size();
  if (n >= 1 && b[0] == 0xcc) return "int3 (uprobes cannot probe it)";
  if (n >= 2 && b[0] == 0xcd && b[1] == 0x03) return "int $3 (uprobes cannot probe it)";
  // Legacy prefixes the x86 uprobe decoder rejects (is_prefix_bad): LOCK and
  // the ES/CS/SS/DS segment overrides (FS/GS are fine). Go's atomics start
  // with `lock`; the kernel would refuse the whole link with errno 524.
  for (size_t i = 0; i < n && i < 4; i++) {
    uint8_t p = b[i];
    if (p == 0xf0) return "a lock-prefixed instruction (uprobes refuse them: errno 524)";
    if (p == 0x26 || p == 0x2e || p == 0x36 || p == 0x3e)
      return "an ES/CS/SS/DS segment prefix (uprobes refuse them: errno 524)";
    if (p != 0x66 && p != 0x67 && p != 0xf2 && p != 0xf3 && p != 0x64 && p != 0x65) break;
  }
  // REX with the B bit, then 0x90: xchg %rax,%r8 (or %eax,%r8d). The kernel
  // takes it for a NOP and emulates it as one.
  if (n >= 2 && (b[0] & 0xf1) == 0x41 && b[1] == 0x90)
    return "xchg %rax,%r8 (49 90), which uprobes execute as a NOP: the program would compute garbage";
  return {};
}

}  // namespace goscope::bpf
