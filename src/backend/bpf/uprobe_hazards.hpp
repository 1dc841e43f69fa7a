// Instructions that uprobes on this kernel refuse or mis-execute, recognized
// by their first bytes. The engine checks every attach address with it before
// the kernel sees it: a safety net under src/binary's placement, which should
// never choose these (docs/kernel.md, "Hazards that crash the traced program").
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace goscope::bpf {

// Why the instruction starting with `bytes` must not be probed, or "" when
// nothing is known against it. Pass at least 4 bytes (up to 16) when the file
// has them.
//   - int3 (cc) and int $3 (cd 03): refused by the kernel;
//   - a LOCK prefix or an ES/CS/SS/DS segment prefix: refused (errno 524) —
//     Go's atomics start with `lock`;
//   - REX.B + 90, xchg %rax,%r8 (runtime.gcWriteBarrierR8's first
//     instruction): the kernel emulates it as a NOP; the program then computes
//     garbage (measured: 3 of 6 compiles of the Go compiler failed with a nil
//     dereference with only that probe attached).
std::string uprobeHazard(std::span<const uint8_t> bytes);

}  // namespace goscope::bpf
