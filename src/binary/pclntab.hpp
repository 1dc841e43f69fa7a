// Pclntab: the Go runtime's own function table (.gopclntab), read from the
// file. It survives `-ldflags='-s -w'` and every stripping tool that keeps the
// program runnable, so it is where names, entries, ends, files and lines come
// from when there is no .symtab or DWARF. Layouts follow Go's
// src/runtime/symtab.go, runtime2.go (_func) and src/debug/gosym/pclntab.go;
// three formats exist since Go 1.16:
//   "1.16" magic 0xfffffffa (Go 1.16, 1.17): absolute entry pcs, absolute funcdata
//   "1.18" magic 0xfffffff0 (Go 1.18, 1.19): entries as offsets from textStart
//   "1.20" magic 0xfffffff1 (Go 1.20 and later): _func gains startLine, the
//          inline tree entry loses its parent/file/line fields
// amd64 (8-byte pointers, little endian) only, like the rest of goscope.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "binary/elf_file.hpp"
#include "util/result.hpp"

namespace goscope {

enum class PclnFormat { Go116, Go118, Go120 };

struct GoFunction {
  std::string name;
  uint64_t entry = 0;
  uint64_t end = 0;   // the next function's entry (the table's end pc for the last one)
  std::string file;   // source position of the entry pc
  int line = 0;
  uint8_t funcID = 0; // runtime's funcID (e.g. wrappers, runtime.goexit)
  uint8_t flag = 0;   // runtime's funcFlag (TOPFRAME, SPWRITE, ASM); 0 in Go 1.16
  // _func.args: bytes of the argument frame: stack-passed arguments and
  // results plus, for ABIInternal, the spill slots of register arguments
  // (abi-internal.md); checks a layout computed from DWARF's parameters.
  // INT32_MIN (ArgsSizeUnknown) for assembly functions that do not declare it.
  int32_t args = 0;
  uint32_t funcOff = 0;  // internal: offset of the _func record from the functab base
};

struct SourceFrame {
  std::string function;
  std::string file;
  int line = 0;
  bool inlined = false;  // true for a call that the compiler inlined into its caller
};

struct InlinedCall {
  std::string callee;
  int parentIndex = -1;  // index of the inlined call this call sits in, -1 = the function itself
  std::string callFile;  // source position of the call site
  int callLine = 0;
  uint64_t parentPc = 0;  // absolute pc of an instruction whose position is the call site
  // [start, end) pc ranges where this call is the innermost inlined frame;
  // empty when the compiler optimized the inlined body away entirely.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

class Pclntab {
 public:
  // Errors: BadTarget "<path>: not a Go program (no .gopclntab)" when no table
  // is found; BadTarget when the table is malformed or of an unsupported format.
  static Result<Pclntab> read(const ElfFile& elf);

  const std::vector<GoFunction>& functions() const { return functions_; }
  // The function whose [entry, end) holds pc, or nullptr.
  const GoFunction* functionAt(uint64_t pc) const;
  // First function with exactly this name, or nullptr (linear: for tests and one-off lookups).
  const GoFunction* functionNamed(std::string_view name) const;

  PclnFormat format() const { return format_; }
  std::string_view goVersionFormat() const;  // "1.16", "1.18" or "1.20"
  uint64_t tableAddress() const { return tabAddr_; }  // link-time address of the header
  const std::string& foundBy() const { return foundBy_; }  // which lookup found the table
  // runtime.text, the base of entry offsets (1.18+: from the header, relocated
  // in PIE; 1.16 format: the runtime.text symbol, else the .text section).
  uint64_t textStart() const { return textStart_; }
  // Where inline trees live (moduledata.gofunc), when found; always absent for
  // the 1.16 format, whose funcdata are absolute pointers.
  std::optional<uint64_t> gofunc() const { return gofunc_; }
  // moduledata.types (link-time), when moduledata was found: the base that
  // runtime type offsets (an _type's nameOff, DWARF's DW_AT_go_runtime_type)
  // are relative to. [typesStart, typesEnd) holds the runtime type records.
  std::optional<uint64_t> typesStart() const { return types_; }
  std::optional<uint64_t> typesEnd() const { return etypes_; }

  // Source position of pc, innermost first: each inlined call that covers pc,
  // then the physical function. Empty when pc is in no function.
  std::vector<SourceFrame> symbolize(uint64_t pc) const;
  // The function's inline tree, in table order (empty when nothing was inlined
  // or the tree cannot be located). The tree has no stored length: it is read
  // up to the highest index the function's pcdata mentions, so trailing calls
  // whose bodies were optimized away entirely can be missing.
  std::vector<InlinedCall> inlinedCalls(const GoFunction& fn) const;
  // How far the function has moved SP below its entry's at pc (the pcsp
  // table): 0 in a function without a frame; nullopt when unknown.
  std::optional<int32_t> spDelta(const GoFunction& fn, uint64_t pc) const;
  // For each pc of `pcs` (ascending, inside fn), an instruction start at or
  // before it that the binary's own tables give: the start of the pc-to-line
  // table's run that holds it (a new line starts at an instruction). A pc the
  // table does not cover gets the function's entry.
  std::vector<uint64_t> lineRunStarts(const GoFunction& fn, std::span<const uint64_t> pcs) const;
  // Link-time address of the function's FUNCDATA_ArgInfo (Go 1.17+: how the
  // runtime's traceback prints its arguments; arg_info.hpp), when it has one.
  std::optional<uint64_t> argInfoAddress(const GoFunction& fn) const;

 private:
  Pclntab() = default;
  Result<void> parseHeader();
  Result<void> readFunctions();

  // Accessors into the table; all bounds-checked (0 / empty when out of range).
  uint32_t u32(uint64_t off) const;
  uint64_t u64(uint64_t off) const;
  uint64_t pointerAt(uint64_t off) const;  // relocation-aware (PIE)
  std::string_view cstring(uint64_t off) const;
  std::span<const uint8_t> pcTable(uint32_t pctabOff) const;

  // _func field helpers; funcOff is relative to pclnOff_.
  uint64_t funcBase(uint32_t funcOff) const { return pclnOff_ + funcOff; }
  uint32_t funcField(uint32_t funcOff, int index) const;  // index 1 = nameoff, ...
  uint64_t funcEntry(uint32_t funcOff) const;
  uint64_t fixedFuncSize() const;
  std::optional<int32_t> pcdata(const GoFunction& fn, uint32_t table, uint64_t pc) const;
  std::optional<uint64_t> funcdataAddress(const GoFunction& fn, uint8_t index) const;
  std::pair<std::string, int> fileLine(const GoFunction& fn, uint64_t pc) const;
  // The same from the pcfile and pcln tables' values at the pc (nullopt: none there).
  std::pair<std::string, int> fileLineOf(const GoFunction& fn, std::optional<int32_t> fileno,
                                         std::optional<int32_t> line) const;

  std::shared_ptr<const ElfFile> elf_;  // keeps tab_ (mapped file bytes) alive
  std::span<const uint8_t> tab_;       // from the header to the table's end
  uint64_t tabAddr_ = 0;
  std::string foundBy_;
  PclnFormat format_ = PclnFormat::Go120;
  uint32_t quantum_ = 1;
  uint64_t nfunc_ = 0;
  uint64_t textStart_ = 0;
  uint64_t funcnameOff_ = 0, cuOff_ = 0, filetabOff_ = 0, pctabOff_ = 0, pclnOff_ = 0;
  std::optional<uint64_t> gofunc_;
  std::optional<uint64_t> types_, etypes_;
  std::vector<GoFunction> functions_;
};

}  // namespace goscope
