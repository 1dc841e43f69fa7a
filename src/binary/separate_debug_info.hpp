// Where a Go binary's DWARF comes from (docs/debug-info.md): the executable
// itself, or - for a stripped release binary - a separate file: one the user
// names (--debug-file), one found by GNU build-id under a debug directory
// (DIR/.build-id/xx/yyyy.debug), or one .gnu_debuglink names (next to the
// executable, in its .debug/ subdirectory, or DIR/<its directory>/), as gdb
// looks them up. A separate file is used only when it belongs to the
// executable: same Go build ID, same GNU build-id, same .text bytes (each
// compared when both files have it), and for debuglink the CRC32.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "binary/elf_file.hpp"
#include "util/result.hpp"

namespace goscope {

enum class DebugInfoSource { Embedded, DebugFile, BuildId, Debuglink, None };
// "embedded", "debug-file", "build-id", "debuglink", "none" (info --json's debug_info.source)
const char* debugInfoSourceName(DebugInfoSource s);

struct DebugInfoSearch {
  std::string debugFile;  // --debug-file; empty: look one up
  // --debug-dir, gdb's debug-file-directory: where build-id and debuglink
  // lookups search (besides the executable's own directory).
  std::vector<std::string> debugDirs{"/usr/lib/debug"};
};
// The search every target opened afterwards uses: a property of the
// environment goscope runs in, like gdb's `set debug-file-directory`; the CLI
// sets it once from --debug-file / --debug-dir before it opens a target.
void setDebugInfoSearch(DebugInfoSearch search);
const DebugInfoSearch& debugInfoSearch();

struct DebugInfoOrigin {
  DebugInfoSource source = DebugInfoSource::None;
  std::string path;                     // the file the DWARF is read from; empty for None
  std::shared_ptr<ElfFile> separate;    // the separate file (DebugFile, BuildId, Debuglink)
  std::string matchedBy;                // "Go build ID, .text", for -v
};

// `exe` has no DWARF of its own (or has: then Embedded, and an explicit
// --debug-file is still checked). `exeName` is what messages call it;
// `exeDir` the directory debuglink looks in (as goscope can name it: for a
// process in a container /proc/PID/root/...).
// Errors: NotFound (--debug-file names no file), BadTarget (--debug-file is
// not this executable's, or has no DWARF). Candidates found by a lookup
// that do not match are skipped with a warning, as gdb does.
Result<DebugInfoOrigin> findDebugInfo(const ElfFile& exe, const std::string& exeName, const std::string& exeDir,
                                      const DebugInfoSearch& search);

// Does `debug` belong to `exe`? The comparisons that held ("Go build ID,
// .text"); BadTarget naming what differs, or that nothing could be compared.
Result<std::string> checkDebugFileMatches(const ElfFile& exe, const std::string& exeName, const ElfFile& debug);

}  // namespace goscope
