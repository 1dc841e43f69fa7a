// GoBinary: everything goscope knows about one Go executable, read once:
// the ELF file, the function table from .gopclntab (always there), the build
// info, DWARF when present (lazily: a stripped binary pays nothing and a
// listing without signatures does not wait for it), and the disassembly of
// each function on demand.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "binary/buildinfo.hpp"
#include "binary/disasm.hpp"
#include "binary/dwarf_info.hpp"
#include "binary/elf_file.hpp"
#include "binary/pclntab.hpp"
#include "binary/separate_debug_info.hpp"
#include "util/result.hpp"

namespace goscope {

class GoBinary {
 public:
  // `path` is opened; `displayName` is what messages call it (for a process,
  // /proc/PID/exe is opened but the real path is shown).
  // Errors: NotFound, BadTarget (not ELF, not x86-64, not Go; truncated,
  // unless acceptTruncated: then truncation() says what is lost).
  static Result<std::shared_ptr<GoBinary>> open(const std::string& path, const std::string& displayName = {},
                                                bool acceptTruncated = false);

  // A file cut short (ElfFile::Truncation), and what goscope cannot know of
  // the program for it: nullopt for a whole file. Only a binary opened with
  // acceptTruncated has one (goscope info and list show what is left; every
  // subcommand that probes or reads a process refuses it).
  struct Truncation {
    ElfFile::Truncation file;
    // "the Go build info (go version, module)", "every inlined body (the
    // module data that locates them)", "the code of 12 of 10851 functions",
    // "symbols and DWARF, if it had them (the section headers)".
    std::vector<std::string> lost;
    // "BIN is truncated: it has S bytes where its ELF headers describe D
    // (missing: ...); lost: ..."
    std::string text;
  };
  const std::optional<Truncation>& truncation() const { return truncation_; }

  // Decides where dwarf() and dwarfGlobals() read from: the executable's own
  // DWARF, or a separate debug file (separate_debug_info.hpp). The one place
  // a stripped target gets debug info from elsewhere; called once, before
  // the binary is shared, by every target opener (target.cpp,
  // traced_target.cpp). `exeDir`: where .gnu_debuglink's file is looked for.
  // Errors: those of findDebugInfo (a --debug-file that does not belong).
  Result<void> attachDebugInfo(const DebugInfoSearch& search, const std::string& exeDir);
  // Where the DWARF comes from (None: there is none).
  const DebugInfoOrigin& debugInfoOrigin() const { return debugOrigin_; }
  // DWARF from somewhere (cheap: section headers). dwarf() may still be
  // nullptr when that DWARF is unreadable.
  bool hasDwarf() const { return debugOrigin_.source != DebugInfoSource::None; }
  // DWARF in the executable itself: what Delve needs (dlv reads no
  // separate debug file of a Go binary).
  bool hasEmbeddedDwarf() const;

  const std::string& name() const { return name_; }
  const ElfFile& elf() const { return *elf_; }
  std::shared_ptr<const ElfFile> elfShared() const { return elf_; }
  const Pclntab& pclntab() const { return pcln_; }
  const BuildInfo* buildInfo() const { return build_ ? &*build_ : nullptr; }

  // nullptr when the binary has no DWARF. A malformed DWARF is logged and
  // treated as absent: pclntab alone is enough to probe.
  const DwarfInfo* dwarf() const;
  // The DWARF of the package variables `names` only (DwarfInfo::readGlobals):
  // what a direct read needs, at a fraction of dwarf()'s cost. Read again
  // when a name was not asked before (ask for all at once); earlier results
  // stay valid. nullptr without DWARF, or unreadable DWARF (logged).
  const DwarfInfo* dwarfGlobals(const std::vector<std::string>& names) const;
  bool hasSymtab() const { return elf_->hasSymtab(); }

  // Thread-safe (the file is mapped read-only): parallel_analysis.hpp runs
  // it on every CPU.
  Result<FunctionCode> analyze(const GoFunction& fn, DecodeDepth depth = DecodeDepth::Whole) const;
  // `main.add(x int, y int) int` from DWARF, or nullopt without DWARF.
  std::optional<std::string> signature(const GoFunction& fn) const;
  // The file offset uprobes are placed at for a link-time address.
  std::optional<uint64_t> fileOffset(uint64_t vaddr) const { return elf_->vaddrToOffset(vaddr); }

 private:
  GoBinary(std::shared_ptr<ElfFile> elf, Pclntab pcln) : elf_(std::move(elf)), pcln_(std::move(pcln)) {}

  // The file the DWARF is read from: the executable, or the separate file.
  const ElfFile& dwarfElf() const { return debugOrigin_.separate ? *debugOrigin_.separate : *elf_; }

  std::string name_;
  std::shared_ptr<ElfFile> elf_;
  std::optional<Truncation> truncation_;
  DebugInfoOrigin debugOrigin_;
  Pclntab pcln_;
  std::optional<BuildInfo> build_;
  mutable std::once_flag dwarfOnce_;
  mutable std::optional<DwarfInfo> dwarf_;
  mutable std::mutex globalsMutex_;
  mutable std::vector<std::string> globalsAsked_;
  mutable std::vector<std::unique_ptr<DwarfInfo>> globals_;  // the last answers the latest asked set
  mutable bool globalsMissing_ = false;                      // no DWARF, or unreadable
};

}  // namespace goscope
