#include "target/go_binary.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "util/progress.hpp"

namespace goscope {

Result<std::shared_ptr<GoBinary>> GoBinary::open(const std::string& path, const std::string& displayName) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elf = ElfFile::open(path);
  if (!elf) return elf.failure();
  auto pcln = Pclntab::read(**elf);
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
  // Start-up phases in -v (issue #14): where the time to the first probe goes.
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
