#include "binary/separate_debug_info.hpp"

#include <elf.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>

#include "binary/build_ids.hpp"

namespace goscope {

const char* debugInfoSourceName(DebugInfoSource s) {
  switch (s) {
    case DebugInfoSource::Embedded: return "embedded";
    case DebugInfoSource::DebugFile: return "debug-file";
    case DebugInfoSource::BuildId: return "build-id";
    case DebugInfoSource::Debuglink: return "debuglink";
    case DebugInfoSource::None: return "none";
  }
  return "none";
}

namespace {

DebugInfoSearch& searchSetting() {
  static DebugInfoSearch s;
  return s;
}

bool hasDwarf(const ElfFile& f) { return f.section(".debug_info") || f.section(".zdebug_info"); }

// Build IDs are long (a Go one is 83 characters): enough to tell them apart.
std::string shortId(const std::string& id) { return id.size() > 24 ? id.substr(0, 24) + "…" : id; }

Failure notItsOwn(const std::string& debugPath, const std::string& exeName, const std::string& what) {
  return fail(ErrorKind::BadTarget, debugPath + " does not belong to " + exeName + ": " + what,
              "give the debug file split from this very build (objcopy --only-keep-debug), or its unstripped twin");
}

// nullptr when there is no such file (or it is not ELF: a lookup moves on).
std::shared_ptr<ElfFile> openCandidate(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return nullptr;
  auto f = ElfFile::open(path);
  if (!f) {
    spdlog::warn("ignoring debug file candidate {}: {}", path, f.error().message);
    return nullptr;
  }
  return *f;
}

// A candidate a lookup found: used when it matches, else skipped with a warning.
bool acceptCandidate(const ElfFile& exe, const std::string& exeName, const std::shared_ptr<ElfFile>& cand,
                     DebugInfoSource source, DebugInfoOrigin& out, const std::string& alsoMatchedBy = {}) {
  if (!cand) return false;
  auto ok = checkDebugFileMatches(exe, exeName, *cand);
  if (!ok) {
    spdlog::warn("ignoring {}: {}", cand->path(), ok.error().message);
    return false;
  }
  out.source = source;
  out.path = cand->path();
  out.separate = cand;
  out.matchedBy = alsoMatchedBy.empty() ? *ok : alsoMatchedBy + ", " + *ok;
  return true;
}

std::string joinPath(const std::string& dir, const std::string& rest) {
  if (dir.empty()) return rest;
  return dir.back() == '/' ? dir + rest : dir + "/" + rest;
}

}  // namespace

void setDebugInfoSearch(DebugInfoSearch search) { searchSetting() = std::move(search); }
const DebugInfoSearch& debugInfoSearch() { return searchSetting(); }

Result<std::string> checkDebugFileMatches(const ElfFile& exe, const std::string& exeName, const ElfFile& debug) {
  const std::string& path = debug.path();
  if (!hasDwarf(debug)) return fail(ErrorKind::BadTarget, path + " has no DWARF debug info (no .debug_info section)",
                                    "give the unstripped build, or the file objcopy --only-keep-debug made of it");
  std::vector<std::string> held;
  const auto goExe = goBuildId(exe), goDbg = goBuildId(debug);
  if (goExe && goDbg) {
    if (*goExe != *goDbg)
      return notItsOwn(path, exeName, "its Go build ID is " + shortId(*goDbg) + ", the binary's " + shortId(*goExe));
    held.push_back("Go build ID");
  }
  const auto gnuExe = gnuBuildId(exe), gnuDbg = gnuBuildId(debug);
  if (gnuExe && gnuDbg) {
    if (*gnuExe != *gnuDbg)
      return notItsOwn(path, exeName, "its GNU build-id is " + shortId(*gnuDbg) + ", the binary's " + shortId(*gnuExe));
    held.push_back("GNU build-id");
  }
  // The code: its place always (a split file keeps the section headers, with
  // NOBITS .text), its bytes when both files have them.
  const ElfFile::Section* tExe = exe.section(".text");
  const ElfFile::Section* tDbg = debug.section(".text");
  if (tExe && tDbg) {
    if (tExe->addr != tDbg->addr || tExe->size != tDbg->size)
      return notItsOwn(path, exeName, "its .text is at another address or of another size");
    if (tExe->type == SHT_PROGBITS && tDbg->type == SHT_PROGBITS) {
      auto a = exe.sectionBytes(*tExe), b = debug.sectionBytes(*tDbg);
      if (a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size()) != 0)
        return notItsOwn(path, exeName, "its code (.text) differs");
      held.push_back(".text");
    }
  }
  if (held.empty())
    return fail(ErrorKind::BadTarget,
                "cannot tell whether " + path + " belongs to " + exeName +
                    ": neither has a build ID to compare and it has no code (.text) to compare",
                "give the unstripped build, whose code goscope compares");
  std::string out;
  for (const auto& h : held) out += (out.empty() ? "" : ", ") + h;
  return out;
}

Result<DebugInfoOrigin> findDebugInfo(const ElfFile& exe, const std::string& exeName, const std::string& exeDir,
                                      const DebugInfoSearch& search) {
  DebugInfoOrigin out;
  const bool embedded = hasDwarf(exe);
  if (!search.debugFile.empty()) {
    auto f = ElfFile::open(search.debugFile);
    if (!f) return fail(f.error().kind, "--debug-file " + f.error().message, f.error().hint);
    auto ok = checkDebugFileMatches(exe, exeName, **f);
    if (!ok) return fail(ok.error().kind, "--debug-file " + ok.error().message, ok.error().hint);
    if (!embedded) {
      out.source = DebugInfoSource::DebugFile;
      out.path = (*f)->path();
      out.separate = *f;
      out.matchedBy = *ok;
      return out;
    }
    spdlog::debug("{}: has DWARF of its own; --debug-file {} matches ({}) but is not needed", exeName,
                  search.debugFile, *ok);
  }
  if (embedded) {
    out.source = DebugInfoSource::Embedded;
    out.path = exeName;
    return out;
  }
  // GNU build-id: DIR/.build-id/xx/yyyy.debug.
  if (auto id = gnuBuildId(exe); id && id->size() > 2) {
    for (const auto& dir : search.debugDirs) {
      const std::string p = joinPath(dir, ".build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug");
      if (acceptCandidate(exe, exeName, openCandidate(p), DebugInfoSource::BuildId, out)) return out;
    }
  }
  // .gnu_debuglink: the named file next to the executable, in .debug/, or
  // under each debug directory + the executable's directory; its CRC32 first.
  if (auto link = debuglink(exe)) {
    std::vector<std::string> candidates = {joinPath(exeDir, link->file), joinPath(exeDir, ".debug/" + link->file)};
    std::string relDir = exeDir;
    while (!relDir.empty() && relDir[0] == '/') relDir.erase(0, 1);
    for (const auto& dir : search.debugDirs) candidates.push_back(joinPath(joinPath(dir, relDir), link->file));
    for (const auto& p : candidates) {
      std::error_code ec;
      if (std::filesystem::equivalent(p, exe.path(), ec)) continue;  // a link naming the executable itself
      auto cand = openCandidate(p);
      if (!cand) continue;
      if (uint32_t crc = fileCrc32(*cand); crc != link->crc) {
        spdlog::warn("ignoring {}: its CRC32 is {:08x}, {}'s .gnu_debuglink wants {:08x}", p, crc, exeName, link->crc);
        continue;
      }
      if (acceptCandidate(exe, exeName, cand, DebugInfoSource::Debuglink, out, "CRC32")) return out;
    }
  }
  return out;  // None
}

}  // namespace goscope
