// TypeNamer: the Go name of a runtime type, given its address as an
// interface's type word (or an itab's _type) holds it in the process. This is
// how a trace shows an interface's dynamic type: `error(*errors.errorString)`.
//
// Two sources, both relative to moduledata.types (Pclntab::typesStart):
//  - DWARF, when present: every type's DW_AT_go_runtime_type is its offset
//    from moduledata.types; names are the full import paths DWARF uses
//    (`*net/http.Request`), the same as in signatures;
//  - the runtime's own type records in the file, which stripped binaries keep:
//    runtime._type (Go 1.14 through at least 1.26: size, ptrdata, hash,
//    tflag @20, align, fieldAlign, kind, equal, gcdata, str @40 (nameOff),
//    ptrToThis), its name at moduledata.types + str: a flags byte, the length
//    (a varint since Go 1.17, 2 bytes big-endian before), the bytes; with
//    tflagExtraStar the stored name has a `*` to drop. These names use the
//    package name, not its path (`*http.Request`), as reflect prints them.
// Types made at run time (reflect.StructOf, ...) are in neither: no name.
//
// Not thread-safe (a lookup cache): use from the thread that decodes events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "binary/dwarf_info.hpp"
#include "binary/elf_file.hpp"
#include "binary/pclntab.hpp"

namespace goscope {

class GoBinary;

class TypeNamer {
 public:
  TypeNamer() = default;  // knows no types: every dynamic type prints as its address

  // goVersion ("go1.19.8", from the build info) picks the name encoding;
  // empty: guessed per name. dwarf may be null.
  TypeNamer(std::shared_ptr<const ElfFile> elf, const Pclntab& pcln, const DwarfInfo* dwarf,
            const std::string& goVersion);
  static TypeNamer forBinary(const GoBinary& bin);
  // Names given outright, by link-time address (tests; callers that know better).
  static TypeNamer fromNames(std::unordered_map<uint64_t, std::string> byLinkAddress);

  // Where the executable sits in the process an event came from: runtime
  // address = link-time address + bias (PIE); 0 by default. For -b targets
  // (many processes of one PIE binary) give a per-pid lookup.
  void setLoadBias(uint64_t bias);
  void setLoadBias(std::function<uint64_t(uint32_t pid)> biasOf);

  // The name of the runtime type at a link-time address, or nullopt.
  std::optional<std::string> nameAt(uint64_t linkAddr) const;
  // The name of the runtime type at a runtime address in process `pid`.
  std::optional<std::string> nameOf(uint64_t runtimeAddr, uint32_t pid) const;

  bool knowsTypes() const { return types_ != 0 || !given_.empty(); }
  size_t dwarfNames() const { return dwarfNames_.size(); }

 private:
  std::optional<std::string> fromFile(uint64_t linkAddr) const;

  std::shared_ptr<const ElfFile> elf_;
  uint64_t types_ = 0, etypes_ = 0;  // [moduledata.types, etypes), link-time
  enum class NameLen { Varint, BigEndian16, Guess } nameLen_ = NameLen::Guess;
  std::unordered_map<uint64_t, std::string> dwarfNames_;  // offset from types_ -> name
  std::unordered_map<uint64_t, std::string> given_;       // link-time address -> name
  std::function<uint64_t(uint32_t)> biasOf_;
  mutable std::unordered_map<uint64_t, std::optional<std::string>> cache_;
};

}  // namespace goscope
