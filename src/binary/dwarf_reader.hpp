// Internal to DwarfInfo: one pass over the DWARF of a Go binary through libdw,
// filling a DwarfInfo's plain tables. dwarf_reader.cpp walks compile units,
// functions and variables; dwarf_types.cpp names, sizes and describes types.
#pragma once

#include <elfutils/libdw.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "binary/dwarf_info.hpp"

namespace goscope {

class DwarfReader {
 public:
  DwarfReader(Dwarf* dbg, DwarfInfo& out);

  // A DIE's name, or a string attribute, only when it ends inside the
  // section it lies in: libdw hands out pointers into section data without
  // checking that a DW_FORM_string or a .debug_str entry is terminated, and
  // a malformed file then reads past the buffer (the fuzzer found it once
  // libelf read sections into exact-size buffers). nullptr otherwise.
  const char* dieName(Dwarf_Die* die) const;
  const char* formString(Dwarf_Attribute* a) const;
  // Everything (DwarfInfo::read).
  Result<void> run();
  // The package variables `names` and the types they reach (DwarfInfo::readGlobals).
  Result<void> runGlobals(const std::vector<std::string>& names);

  // ---- types (dwarf_types.cpp) ----
  // The Go name of the type a DIE denotes; subprogram-local `.paramN`
  // typedefs (generic shape instantiations) are looked through.
  std::string typeName(Dwarf_Die* die);
  std::string typeNameOf(Dwarf_Die* die);  // of the DIE's DW_AT_type, "" if none
  uint64_t typeSize(Dwarf_Die* die, int depth = 0);
  uint64_t typeSizeOf(Dwarf_Die* die);  // of the DIE's DW_AT_type
  // Notes a top-level type DIE of a CU; built into GoTypes by finishTypes().
  void noteType(Dwarf_Die* die);
  void finishTypes();
  // Builds only the noted types named in `roots` and those their fields,
  // elements and keys name, transitively.
  void finishTypesReachedFrom(std::vector<std::string> roots);

 private:
  // ---- functions and variables (dwarf_reader.cpp) ----
  void readUnit(Dwarf_Die* cu);
  // readGlobals: the unit's top-level DIEs only; `asked` matches names.
  bool readUnitGlobals(Dwarf_Die* cu, const std::vector<std::string>& asked);
  void readSubprogram(Dwarf_Die* cu, Dwarf_Die* die);
  void readParams(Dwarf_Die* die, std::vector<DwarfParam>& params, std::vector<Dwarf_Off>* originOf);
  DwarfParam readParam(Dwarf_Die* die);
  std::vector<LocationRange> readLocations(Dwarf_Die* die, bool frameBaseIsCfa);
  void collectInlined(Dwarf_Die* cu, Dwarf_Die* parent, const std::string& caller, int depth = 0);
  void readVariable(Dwarf_Die* die);
  std::string fileName(Dwarf_Die* cu, uint64_t index);
  void finishFunctions();

  GoType buildType(Dwarf_Die* die, int depth = 0);

  Dwarf* dbg_;

  std::vector<std::pair<const char*, const char*>> sections_;  // [begin, end) of each section's data
  DwarfInfo& out_;

  // Per entry of out_.functions_: the abstract DIE it is or copies (0: none).
  std::vector<Dwarf_Off> originOf_;
  // Abstract DIE offset -> index in out_.functions_ (inlined-only candidates)
  std::unordered_map<Dwarf_Off, size_t> abstractFn_;
  // Abstract DIE offsets that also have an out-of-line copy.
  std::unordered_map<Dwarf_Off, bool> hasConcrete_;
  // Abstract DIE offset -> the places its body was inlined.
  std::unordered_map<Dwarf_Off, std::vector<DwarfInlinedCall>> inlined_;
  // Abstract DIE offset -> (CU offset, the pc of one inlined body) to find its file.
  std::unordered_map<Dwarf_Off, std::pair<Dwarf_Off, uint64_t>> inlinedSample_;

  struct TypeCandidate {
    Dwarf_Off offset;
    bool hasGoKind;
  };
  std::unordered_map<std::string, TypeCandidate> typeCandidates_;
  bool recordRuntimeTypes_ = false;  // runGlobals: fill out_.typeByRuntimeOffset_
  std::unordered_map<Dwarf_Off, std::string> nameCache_;
  std::unordered_map<Dwarf_Off, uint64_t> sizeCache_;
};

// Attribute accessors shared by the reader's two files.
inline std::optional<uint64_t> udataAttr(Dwarf_Die* die, unsigned at) {
  Dwarf_Attribute a;
  Dwarf_Word v;
  if (!dwarf_attr(die, at, &a) || dwarf_formudata(&a, &v) != 0) return std::nullopt;
  return v;
}
inline bool refAttr(Dwarf_Die* die, unsigned at, Dwarf_Die* target) {
  Dwarf_Attribute a;
  return dwarf_attr(die, at, &a) && dwarf_formref_die(&a, target);
}
inline bool flagAttr(Dwarf_Die* die, unsigned at) {
  Dwarf_Attribute a;
  bool v = false;
  return dwarf_attr(die, at, &a) && dwarf_formflag(&a, &v) == 0 && v;
}

// Go's own DWARF attributes (cmd/internal/dwarf).
inline constexpr unsigned kAtGoKind = 0x2900;
inline constexpr unsigned kAtGoKey = 0x2901;
inline constexpr unsigned kAtGoElem = 0x2902;
inline constexpr unsigned kAtGoEmbeddedField = 0x2903;
inline constexpr unsigned kAtGoRuntimeType = 0x2904;

}  // namespace goscope
