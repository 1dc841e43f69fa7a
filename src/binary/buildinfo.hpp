// BuildInfo: what `go version -m BINARY` prints — the Go toolchain version and
// the module information cmd/go embeds — read the way src/debug/buildinfo
// does. The blob is 32 bytes: "\xff Go buildinf:", pointer size, flags, then
// either (flags & 2, Go 1.18+) two varint-prefixed strings after the header,
// or (Go 1.17 and older) two pointers to Go string headers
// (runtime.buildVersion, runtime.modinfo), which PIE keeps in relocations.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "binary/elf_file.hpp"
#include "util/result.hpp"

namespace goscope {

struct BuildInfo {
  std::string goVersion;    // "go1.19.8"
  std::string path;         // the main package: `path` line
  std::string mainModule;   // `mod` line: module path
  std::string mainVersion;  // `mod` line: version, "(devel)" for local builds
  std::vector<std::pair<std::string, std::string>> settings;  // `build` lines, in order
  std::string rawModinfo;   // modinfo without its 16-byte sentinels; empty outside module mode
  // Where the facts came from: "buildinfo" (the blob, as `go version` reads it)
  // or "scan" (no blob: some release pipelines delete .go.buildinfo, e.g.
  // esbuild >= 0.27; then goVersion is the one string runtime.buildVersion
  // points to and modinfo is found between its sentinels).
  std::string source;
};

// Errors: BadTarget "<path>: no Go build info" when neither the blob nor the
// fallback finds a Go version.
Result<BuildInfo> readBuildInfo(const ElfFile& elf);

// Parses modinfo text (sentinels stripped) into info's path, main module and
// settings, as runtime/debug.ParseBuildInfo does; unknown lines are ignored.
void parseModinfo(std::string_view modinfo, BuildInfo& info);

}  // namespace goscope
