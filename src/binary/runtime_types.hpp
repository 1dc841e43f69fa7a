// Named types in the runtime's own type records ([moduledata.types, etypes)),
// which stripped binaries keep: how goscope knows, without DWARF, that a
// user signature's `main.Shape` or `io.Writer` is an interface (two words,
// itab and data) and not a struct of some other size.
//
// A named type's runtime._type is not listed anywhere a reader can walk
// (moduledata.typelinks holds unnamed composite types only, and is empty in
// Go 1.27), so the records are found from the name: its bytes in the type
// section (`*main.Shape`, with the tflagExtraStar `*`), then the 8-aligned
// _type whose str (a nameOff from types) points at them. The record's layout
// and the name encodings are in docs/go-runtime.md ("Runtime type records").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "binary/dwarf_info.hpp"

namespace goscope {

class ElfFile;
class GoBinary;

struct RuntimeType {
  uint64_t addr = 0;  // link-time address of its runtime._type
  GoType::Kind kind = GoType::Kind::Invalid;
  uint64_t size = 0;
};

// The runtime's name for a type as a Go user writes it: names carry the
// package's name, not its path (`net/http.ResponseWriter` ->
// `http.ResponseWriter`), as reflect prints them.
std::string runtimeTypeName(std::string_view name);

// Every type record named `name` (runtimeTypeName applied): normally one,
// none when the binary has no such type (or only DWARF knows it), two when
// packages of one name (two `v1`) both define it. Empty when the binary has
// no type range (no moduledata found).
std::vector<RuntimeType> runtimeTypesNamed(const ElfFile& elf, uint64_t types, uint64_t etypes,
                                           std::string_view name);
std::vector<RuntimeType> runtimeTypesNamed(const GoBinary& bin, std::string_view name);

}  // namespace goscope
