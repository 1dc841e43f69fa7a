// The one Zydis decoder every sweep of the code uses (disasm.cpp's function
// analysis, call_sites.cpp's search for references to entries).
#pragma once

#include <Zydis/Zydis.h>

namespace goscope {

// 64-bit long mode, every ISA extension Zydis knows, in Zydis's minimal mode:
// a decode fills the length, the mnemonic, the address width and the raw
// fields (prefixes, ModRM, displacement, immediates and whether they are
// relative), which is all goscope reads, and skips the semantic pass
// (attributes beyond the raw ones, accessed flags, AVX details) that was a
// third of the decoder's time at start-up. Which bytes decode, and to what
// length, is the same in both modes (docs/disassembly.md, "Zydis's minimal
// mode"). A constant struct, shared by all threads.
const ZydisDecoder& zydisDecoder();
// The same machine mode in Zydis's full mode, for the rare sweep that reads
// operands (which register, which memory base and displacement): the
// argument places of one function (arg_places.hpp).
const ZydisDecoder& zydisOperandDecoder();

}  // namespace goscope
