// The identities an ELF file carries that tie a separate debug file to the
// executable it was split from (docs/debug-info.md): Go's build ID note
// (.note.go.buildid, every Go binary), the GNU build-id note
// (.note.gnu.build-id: only with -ldflags=-B), and the .gnu_debuglink
// section (a file name and the CRC32 of that file, added by
// `objcopy --add-gnu-debuglink`). Note sections survive both strip and
// `objcopy --only-keep-debug` (which keeps them as SHT_NOTE with contents).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "binary/elf_file.hpp"

namespace goscope {

// "actionID/contentID..." as `go tool buildid` prints it; nullopt without the note.
std::optional<std::string> goBuildId(const ElfFile& elf);
// The GNU build-id as lowercase hex ("a1b2..."); nullopt without the note.
std::optional<std::string> gnuBuildId(const ElfFile& elf);

struct Debuglink {
  std::string file;  // a bare file name, e.g. "server.debug"
  uint32_t crc = 0;  // CRC32 (zlib's) of that whole file
};
std::optional<Debuglink> debuglink(const ElfFile& elf);

// CRC32 of a whole file's bytes, as .gnu_debuglink stores it.
uint32_t fileCrc32(const ElfFile& elf);

}  // namespace goscope
