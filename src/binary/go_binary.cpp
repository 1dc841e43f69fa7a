#include "binary/go_binary.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "util/progress.hpp"

namespace goscope {

namespace {

// "it has S bytes where its ELF headers describe D (missing: a, b)"
std::string shortfall(const ElfFile::Truncation& t) {
  std::string s = "it has " + std::to_string(t.size) + " bytes where its ELF headers describe " +
                  std::to_string(t.described) + " (missing: ";
  for (size_t i = 0; i < t.missing.size(); i++) s += (i ? ", " : "") + t.missing[i];
  return s + ")";
}

// What the part of the file that is gone held, as far as the reading shows.
std::vector<std::string> lostParts(const ElfFile& elf, const Pclntab& pcln, bool buildInfo) {
  std::vector<std::string> lost;
  const auto& missing = elf.truncation()->missing;
  const bool noSectionHeaders = std::find(missing.begin(), missing.end(), "the section headers") != missing.end();
  if (!buildInfo) lost.push_back("the Go build info (go version, module)");
  // The 1.18+ tables find inline trees through moduledata.gofunc.
  if (pcln.format() != PclnFormat::Go116 && !pcln.gofunc())
    lost.push_back("every inlined body (the module data that locates them)");
  size_t codeGone = 0;
  for (const auto& fn : pcln.functions())
    if (fn.end > fn.entry && !elf.readVaddr(fn.entry, fn.end - fn.entry)) codeGone++;
  if (codeGone)
    lost.push_back("the code of " + std::to_string(codeGone) + " of " + std::to_string(pcln.functions().size()) +
                   " functions");
  auto sectionGone = [&](std::string_view prefix) {
    return std::any_of(missing.begin(), missing.end(), [&](const std::string& m) { return m.starts_with(prefix); });
  };
  if (noSectionHeaders) lost.push_back("symbols and DWARF, if it had them (the section headers)");
  else if (sectionGone(".debug_") || sectionGone(".zdebug_")) lost.push_back("DWARF (signatures, types, Delve)");
  if (!noSectionHeaders && (sectionGone(".symtab") || sectionGone(".strtab"))) lost.push_back("the symbol table");
  return lost;
}

}  // namespace

Result<std::shared_ptr<GoBinary>> GoBinary::open(const std::string& path, const std::string& displayName,
                                                 bool acceptTruncated) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elf = ElfFile::open(path);
  if (!elf) return elf.failure();
  const std::string shownName = displayName.empty() ? path : displayName;
  auto pcln = Pclntab::read(**elf);
  if (!pcln && (*elf)->truncation()) {
    // Not "not a Go program": a Go program whose function table is in the
    // part that is gone.
    return fail(ErrorKind::BadTarget,
                shownName + " is truncated: " + shortfall(*(*elf)->truncation()) +
                    "; no whole Go function table in what is left",
                "copy the whole file again");
  }
  if (!pcln) {
    Error e = pcln.error();
    if (!displayName.empty() && displayName != path) {
      // Say it with the name the user knows, not /proc/PID/exe.
      auto pos = e.message.find(path);
      if (pos != std::string::npos) e.message.replace(pos, path.size(), displayName);
    }
    return fail(e);
  }
  std::shared_ptr<GoBinary> b(new GoBinary(std::move(*elf), std::move(*pcln)));
  b->name_ = displayName.empty() ? path : displayName;
  // Named as messages name the binary (for a process its path, not /proc/PID/exe).
  if (b->hasEmbeddedDwarf()) b->debugOrigin_ = {DebugInfoSource::Embedded, b->name_, nullptr, ""};
  if (auto bi = readBuildInfo(*b->elf_)) b->build_ = std::move(*bi);
  else spdlog::debug("{}: {}", b->name_, bi.error().message);
  if (const auto& cut = b->elf_->truncation()) {
    Truncation t{*cut, lostParts(*b->elf_, b->pcln_, b->build_.has_value()), ""};
    t.text = b->name_ + " is truncated: " + shortfall(*cut);
    if (!t.lost.empty()) {
      t.text += "; lost: ";
      for (size_t i = 0; i < t.lost.size(); i++) t.text += (i ? ", " : "") + t.lost[i];
    }
    if (!acceptTruncated)
      return fail(ErrorKind::BadTarget, t.text,
                  "goscope probes and reads only a whole executable: copy it again (goscope info and list show "
                  "what is left)");
    b->truncation_ = std::move(t);
  }
  // Start-up phases in -v: where the time to the first probe goes.
  spdlog::debug("start-up: {}: ELF and pclntab read, {} functions, in {:.1f} ms ({:.0f} ms after goscope started)",
                b->name_, b->pcln_.functions().size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                secondsSinceProcessStart() * 1000);
  return b;
}

Result<void> GoBinary::attachDebugInfo(const DebugInfoSearch& search, const std::string& exeDir) {
  auto origin = findDebugInfo(*elf_, name_, exeDir, search);
  if (!origin) return origin.failure();
  debugOrigin_ = std::move(*origin);
  if (debugOrigin_.separate)
    spdlog::debug("{}: debug info from {} ({}; matched by {})", name_, debugOrigin_.path,
                  debugInfoSourceName(debugOrigin_.source), debugOrigin_.matchedBy);
  else
    spdlog::debug("{}: debug info: {}", name_, debugInfoSourceName(debugOrigin_.source));
  return {};
}

bool GoBinary::hasEmbeddedDwarf() const { return elf_->section(".debug_info") || elf_->section(".zdebug_info"); }

const DwarfInfo* GoBinary::dwarf() const {
  std::call_once(dwarfOnce_, [this] {
    auto d = DwarfInfo::read(dwarfElf());
    if (!d) {
      spdlog::warn("{}: ignoring unreadable DWARF: {}", name_, d.error().message);
      return;
    }
    dwarf_ = std::move(*d);
  });
  return dwarf_ ? &*dwarf_ : nullptr;
}

const DwarfInfo* GoBinary::dwarfGlobals(const std::vector<std::string>& names) const {
  std::lock_guard lock(globalsMutex_);
  if (globalsMissing_) return nullptr;
  bool known = !globals_.empty();
  for (const auto& n : names) {
    if (std::find(globalsAsked_.begin(), globalsAsked_.end(), n) != globalsAsked_.end()) continue;
    globalsAsked_.push_back(n);
    known = false;
  }
  if (known) return globals_.back().get();
  const auto t0 = std::chrono::steady_clock::now();
  auto d = DwarfInfo::readGlobals(dwarfElf(), globalsAsked_);
  spdlog::debug("{}: DWARF of {} package variable(s) read in {:.1f} ms (top-level DIEs only)", name_,
                globalsAsked_.size(), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (!d || !*d) {
    if (!d) spdlog::warn("{}: ignoring unreadable DWARF: {}", name_, d.error().message);
    globalsMissing_ = true;
    return nullptr;
  }
  globals_.push_back(std::make_unique<DwarfInfo>(std::move(**d)));
  return globals_.back().get();
}

Result<FunctionCode> GoBinary::analyze(const GoFunction& fn, DecodeDepth depth) const {
  if (fn.end <= fn.entry) return fail(ErrorKind::BadTarget, fn.name + ": empty function range");
  auto bytes = elf_->readVaddr(fn.entry, fn.end - fn.entry);
  if (!bytes) return fail(ErrorKind::BadTarget, fn.name + ": code not in the file");
  return analyzeFunction(*bytes, fn.entry, depth);
}

std::optional<std::string> GoBinary::signature(const GoFunction& fn) const {
  const DwarfInfo* d = dwarf();
  if (!d) return std::nullopt;
  const DwarfFunction* df = d->functionAt(fn.entry);
  if (!df) return std::nullopt;
  return d->signature(*df);
}

}  // namespace goscope
