#include "binary/pclntab.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "binary/pclntab_decode.hpp"
#include "binary/pclntab_locate.hpp"

namespace goscope {
namespace {

// runtime/symtab.go: _PCDATA_InlTreeIndex and _FUNCDATA_InlTree (same in 1.16 .. 1.27).
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint8_t kFuncdataInlTree = 3;
// internal/abi/symtab.go: FUNCDATA_ArgInfo (Go 1.17 .. 1.27).
constexpr uint8_t kFuncdataArgInfo = 5;

// Where moduledata keeps types, etypes, rodata and gofunc (byte offsets).
// gofunc: 38 words in, after pcHeader, six slices, findfunctab, minpc/maxpc
// and 13 section bounds (1.18, 1.19); Go 1.20 inserted covctrs/ecovctrs
// before it. types, etypes: right after gcbss, 35 words in through Go 1.19
// (also in 1.16 and 1.17, which had no rodata/gofunc after them), 37 words in
// from Go 1.20; rodata right before gofunc. Unchanged through Go 1.26. Go
// 1.27 has one more word between types and etypes and two more between
// etypes and rodata (docs/go-runtime.md, "moduledata"). 0: not there.
struct ModuledataLayout {
  uint64_t types, etypes, rodata, gofunc;
};
constexpr ModuledataLayout kLayout116 = {280, 288, 0, 0};
constexpr ModuledataLayout kLayout118 = {280, 288, 296, 304};
constexpr ModuledataLayout kLayout120 = {296, 304, 312, 320};
constexpr ModuledataLayout kLayout127 = {296, 312, 336, 344};

// One inline tree entry (runtime.inlinedCall). 1.16-1.19: parent int16,
// funcID u8, pad, file int32, line int32, func_ (name offset) int32, parentPc
// int32 = 20 bytes. 1.20+: funcID u8, pad[3], nameOff int32, parentPc int32,
// startLine int32 = 16 bytes; the parent is found through the pcdata at parentPc.
struct InlEntry {
  std::string name;
  int parent = -1;  // stored before 1.20 only
  int32_t file = -1, line = 0;  // call site, stored before 1.20 only (file: per-CU index)
  int32_t parentPc = 0;
};

}  // namespace

// Why no table was found: a file that has a .gopclntab section (or Go's
// build info) is a Go program whose table is damaged, which "not a Go
// program" would hide.
static std::string whyNoTable(const ElfFile& elf) {
  if (const auto* s = elf.section(".gopclntab")) {
    auto bytes = elf.sectionBytes(*s);
    char magic[32] = "";
    if (bytes.size() >= 4)
      std::snprintf(magic, sizeof magic, "magic 0x%08x", static_cast<unsigned>(bytes[0] | bytes[1] << 8 | bytes[2] << 16 |
                                                                              static_cast<uint32_t>(bytes[3]) << 24));
    return "a damaged Go program: its .gopclntab section does not read as any Go release's function table (" +
           std::string(bytes.size() >= 4 ? magic : "shorter than a header") + ")";
  }
  if (elf.section(".go.buildinfo"))
    return "a damaged Go program: it has Go build info (.go.buildinfo) but no readable function table (.gopclntab)";
  return "not a Go program (no .gopclntab)";
}

Result<Pclntab> Pclntab::read(const ElfFile& elf) {
  auto loc = pcln::locateTable(elf);
  if (!loc) return fail(ErrorKind::BadTarget, elf.path() + ": " + whyNoTable(elf));
  Pclntab t;
  t.elf_ = elf.weak_from_this().lock();
  if (!t.elf_) return fail(ErrorKind::Internal, elf.path() + ": ElfFile not owned by a shared_ptr");
  t.tab_ = loc->bytes;
  t.tabAddr_ = loc->addr;
  t.foundBy_ = loc->how;
  if (auto r = t.parseHeader(); !r) return r.failure();
  if (auto r = t.readFunctions(); !r) return r.failure();

  auto md = pcln::locateModuledata(elf, t.tabAddr_, t.tabAddr_ + t.funcnameOff_, t.textStart_);
  if (md) {
    // The 1.20 table format has two moduledata layouts: the first that reads
    // sanely wins (1.27's word after types is no address above it).
    std::vector<ModuledataLayout> layouts = {kLayout116};
    if (t.format_ == PclnFormat::Go118) layouts = {kLayout118};
    if (t.format_ == PclnFormat::Go120) layouts = {kLayout120, kLayout127};
    for (const auto& l : layouts) {
      auto types = elf.readPointer(*md + l.types), etypes = elf.readPointer(*md + l.etypes);
      // Sanity: a non-empty range of file-backed bytes.
      if (!types || !etypes || *types >= *etypes || !elf.readVaddr(*types, *etypes - *types)) continue;
      t.types_ = *types;
      t.etypes_ = *etypes;
      if (l.gofunc) {
        auto gofunc = elf.readPointer(*md + l.gofunc), rodata = elf.readPointer(*md + l.rodata);
        // Sanity: gofunc is mapped and not below moduledata.rodata.
        if (gofunc && rodata && *gofunc >= *rodata && elf.readVaddr(*gofunc, 1)) t.gofunc_ = *gofunc;
      }
      break;
    }
  }
  return t;
}

Result<void> Pclntab::parseHeader() {
  uint32_t magic = u32(0);
  auto word = [&](int i) { return u64(8 + 8 * static_cast<uint64_t>(i)); };
  quantum_ = tab_[6];
  nfunc_ = word(0);
  if (magic == pcln::kMagic116) {
    format_ = PclnFormat::Go116;
    funcnameOff_ = word(2), cuOff_ = word(3), filetabOff_ = word(4), pctabOff_ = word(5), pclnOff_ = word(6);
  } else {
    format_ = magic == pcln::kMagic118 ? PclnFormat::Go118 : PclnFormat::Go120;
    // textStart is runtime.text. PIE stores it as a RELATIVE relocation (Go's
    // linkers also write the value in place; others may leave 0 there).
    textStart_ = pointerAt(8 + 16);
    funcnameOff_ = word(3), cuOff_ = word(4), filetabOff_ = word(5), pctabOff_ = word(6), pclnOff_ = word(7);
  }
  if (textStart_ == 0) {
    // runtime.text marks the first Go function. Not the .text section start in
    // externally linked programs (C startup code comes first), so the symbol wins.
    for (const auto& s : elf_->symbols())
      if (s.name == "runtime.text") textStart_ = s.value;
    if (textStart_ == 0)
      if (const auto* text = elf_->section(".text")) textStart_ = text->addr;
    // A truncated file whose section names are gone (.shstrtab is last): the
    // one executable section is .text, as Go's own linker writes it.
    if (textStart_ == 0) {
      const ElfFile::Section* only = nullptr;
      size_t exec = 0;
      for (const auto& s : elf_->sections())
        if (s.flags & SHF_EXECINSTR) exec++, only = s.name.empty() ? &s : nullptr;
      if (exec == 1 && only) textStart_ = only->addr;
    }
  }
  // Function entries are offsets from it (the 1.18 and 1.20 formats; Go 1.27
  // writes 0 in the header): without it every address would be wrong.
  if (textStart_ == 0 && format_ != PclnFormat::Go116)
    return fail(ErrorKind::BadTarget, elf_->path() + ": the Go function table does not say where the code starts "
                                                     "(runtime.text), and neither a .text section nor a symbol does");
  return {};
}

Result<void> Pclntab::readFunctions() {
  const bool v116 = format_ == PclnFormat::Go116;
  const uint64_t stride = v116 ? 16 : 8;
  auto pcAt = [&](uint64_t i) {
    return v116 ? pointerAt(pclnOff_ + stride * i) : textStart_ + u32(pclnOff_ + stride * i);
  };
  auto funcOffAt = [&](uint64_t i) {
    return v116 ? u64(pclnOff_ + stride * i + 8) : u32(pclnOff_ + stride * i + 4);
  };
  if (pclnOff_ + stride * nfunc_ + (v116 ? 8 : 4) > tab_.size())
    return fail(ErrorKind::BadTarget, elf_->path() + ": truncated Go function table");

  functions_.reserve(nfunc_);
  for (uint64_t i = 0; i < nfunc_; i++) {
    GoFunction f;
    f.entry = pcAt(i);
    f.end = pcAt(i + 1);
    uint64_t off = funcOffAt(i);
    if (off > UINT32_MAX || funcBase(static_cast<uint32_t>(off)) + fixedFuncSize() > tab_.size())
      return fail(ErrorKind::BadTarget, elf_->path() + ": Go function record out of bounds");
    f.funcOff = static_cast<uint32_t>(off);
    f.name = std::string(cstring(funcnameOff_ + funcField(f.funcOff, 1)));
    f.args = static_cast<int32_t>(funcField(f.funcOff, 2));
    uint64_t tail = funcBase(f.funcOff) + fixedFuncSize() - 4;  // funcID, flag, pad, nfuncdata
    f.funcID = tab_[tail];
    f.flag = v116 ? 0 : tab_[tail + 1];  // 1.16 had padding there; 1.17 added flag
    auto [file, line] = fileLine(f, f.entry);
    f.file = std::move(file);
    f.line = line;
    functions_.push_back(std::move(f));
  }
  // The linker writes the table in pc order; sorting only when it is not
  // spares stable_sort's buffer, a second copy of every record (8 MB for
  // 80,000 functions, at the start-up's peak of memory).
  auto byEntry = [](const GoFunction& a, const GoFunction& b) { return a.entry < b.entry; };
  if (!std::is_sorted(functions_.begin(), functions_.end(), byEntry))
    std::stable_sort(functions_.begin(), functions_.end(), byEntry);
  return {};
}

const GoFunction* Pclntab::functionAt(uint64_t pc) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), pc,
                             [](uint64_t v, const GoFunction& f) { return v < f.entry; });
  if (it == functions_.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

const GoFunction* Pclntab::functionNamed(std::string_view name) const {
  for (const auto& f : functions_)
    if (f.name == name) return &f;
  return nullptr;
}

std::string_view Pclntab::goVersionFormat() const {
  switch (format_) {
    case PclnFormat::Go116: return "1.16";
    case PclnFormat::Go118: return "1.18";
    case PclnFormat::Go120: return "1.20";
  }
  return "?";
}

// ---- raw access -------------------------------------------------------------

uint32_t Pclntab::u32(uint64_t off) const {
  uint32_t v = 0;
  if (off + 4 <= tab_.size()) std::memcpy(&v, tab_.data() + off, 4);
  return v;
}

uint64_t Pclntab::u64(uint64_t off) const {
  uint64_t v = 0;
  if (off + 8 <= tab_.size()) std::memcpy(&v, tab_.data() + off, 8);
  return v;
}

uint64_t Pclntab::pointerAt(uint64_t off) const {
  if (off + 8 > tab_.size()) return 0;
  return elf_->readPointer(tabAddr_ + off).value_or(0);
}

std::string_view Pclntab::cstring(uint64_t off) const {
  if (off >= tab_.size()) return {};
  const char* p = reinterpret_cast<const char*>(tab_.data() + off);
  const void* nul = std::memchr(p, 0, tab_.size() - off);
  return nul ? std::string_view(p, static_cast<const char*>(nul) - p) : std::string_view();
}

std::span<const uint8_t> Pclntab::pcTable(uint32_t pctabOff) const {
  // Offset 0 means "no table" (runtime.pcvalue returns -1 for it).
  if (pctabOff == 0 || pctabOff_ + pctabOff >= tab_.size()) return {};
  return tab_.subspan(pctabOff_ + pctabOff);
}

// ---- _func records ----------------------------------------------------------

uint64_t Pclntab::fixedFuncSize() const {
  // entry (uintptr in 1.16, uint32 offset after), 8 uint32 fields, startLine
  // (1.20+), then funcID, flag, pad, nfuncdata.
  uint64_t entry = format_ == PclnFormat::Go116 ? 8 : 4;
  return entry + 8 * 4 + (format_ == PclnFormat::Go120 ? 4 : 0) + 4;
}

uint32_t Pclntab::funcField(uint32_t funcOff, int index) const {
  // 1 nameoff, 2 args, 3 deferreturn, 4 pcsp, 5 pcfile, 6 pcln, 7 npcdata, 8 cuOffset, 9 startLine
  uint64_t entry = format_ == PclnFormat::Go116 ? 8 : 4;
  return u32(funcBase(funcOff) + entry + 4 * static_cast<uint64_t>(index - 1));
}

std::optional<int32_t> Pclntab::pcdata(const GoFunction& fn, uint32_t table, uint64_t pc) const {
  if (table >= funcField(fn.funcOff, 7)) return std::nullopt;
  uint32_t off = u32(funcBase(fn.funcOff) + fixedFuncSize() + 4 * static_cast<uint64_t>(table));
  return pcln::pcValueAt(pcTable(off), fn.entry, pc, quantum_);
}

std::optional<uint64_t> Pclntab::funcdataAddress(const GoFunction& fn, uint8_t index) const {
  uint64_t tail = funcBase(fn.funcOff) + fixedFuncSize() - 1;
  if (tail >= tab_.size() || index >= tab_[tail]) return std::nullopt;  // nfuncdata
  uint64_t p = funcBase(fn.funcOff) + fixedFuncSize() + 4 * static_cast<uint64_t>(funcField(fn.funcOff, 7));
  if (format_ == PclnFormat::Go116) {
    // Absolute pointers, 8-aligned in memory (runtime.funcdata adds 4 when needed).
    if ((tabAddr_ + p) % 8 != 0) p += 4;
    uint64_t addr = pointerAt(p + 8 * static_cast<uint64_t>(index));
    return addr ? std::optional<uint64_t>(addr) : std::nullopt;
  }
  uint32_t off = u32(p + 4 * static_cast<uint64_t>(index));
  if (off == UINT32_MAX || !gofunc_) return std::nullopt;
  return *gofunc_ + off;
}

std::optional<uint64_t> Pclntab::argInfoAddress(const GoFunction& fn) const {
  return funcdataAddress(fn, kFuncdataArgInfo);
}

std::optional<int32_t> Pclntab::spDelta(const GoFunction& fn, uint64_t pc) const {
  return pcln::pcValueAt(pcTable(funcField(fn.funcOff, 4)), fn.entry, pc, quantum_);
}

std::vector<uint64_t> Pclntab::lineRunStarts(const GoFunction& fn, std::span<const uint64_t> pcs) const {
  std::vector<uint64_t> out(pcs.size(), fn.entry);
  // Only code the compiler wrote: an assembly function may spell one
  // instruction as BYTE directives over several lines, and a new line there
  // starts inside an instruction (docs/go-runtime.md, "The pc tables").
  if (fileLine(fn, fn.entry).first.ends_with(".s")) return out;
  const auto starts = pcln::runStartsAt(pcTable(funcField(fn.funcOff, 6)), fn.entry, pcs, quantum_);
  for (size_t i = 0; i < pcs.size(); i++)
    if (starts[i] && *starts[i] >= fn.entry && *starts[i] <= pcs[i]) out[i] = *starts[i];
  return out;
}

std::pair<std::string, int> Pclntab::fileLine(const GoFunction& fn, uint64_t pc) const {
  return fileLineOf(fn, pcln::pcValueAt(pcTable(funcField(fn.funcOff, 5)), fn.entry, pc, quantum_),
                    pcln::pcValueAt(pcTable(funcField(fn.funcOff, 6)), fn.entry, pc, quantum_));
}

std::pair<std::string, int> Pclntab::fileLineOf(const GoFunction& fn, std::optional<int32_t> fileno,
                                                std::optional<int32_t> line) const {
  if (!fileno || !line || *fileno < 0) return {"?", 0};
  uint32_t cu = funcField(fn.funcOff, 8);
  uint32_t fileoff = u32(cuOff_ + 4 * (static_cast<uint64_t>(cu) + static_cast<uint64_t>(*fileno)));
  if (cu == UINT32_MAX || fileoff == UINT32_MAX) return {"?", *line};
  return {std::string(cstring(filetabOff_ + fileoff)), *line};
}

// ---- inline trees -----------------------------------------------------------

namespace {

std::optional<InlEntry> readInlEntry(const ElfFile& elf, PclnFormat format, uint64_t tree, int index,
                                     const std::function<std::string(uint32_t)>& nameAt) {
  const uint64_t size = format == PclnFormat::Go120 ? 16 : 20;
  auto b = elf.readVaddr(tree + size * static_cast<uint64_t>(index), size);
  if (!b) return std::nullopt;
  auto i32 = [&](size_t off) {
    int32_t v;
    std::memcpy(&v, b->data() + off, 4);
    return v;
  };
  InlEntry e;
  if (format == PclnFormat::Go120) {
    e.name = nameAt(static_cast<uint32_t>(i32(4)));
    e.parentPc = i32(8);
  } else {
    int16_t parent;
    std::memcpy(&parent, b->data(), 2);
    e.parent = parent;
    e.file = i32(4);
    e.line = i32(8);
    e.name = nameAt(static_cast<uint32_t>(i32(12)));
    e.parentPc = i32(16);
  }
  return e;
}

}  // namespace

std::vector<SourceFrame> Pclntab::symbolize(uint64_t pc) const {
  std::vector<SourceFrame> frames;
  const GoFunction* fn = functionAt(pc);
  if (!fn) return frames;
  auto tree = funcdataAddress(*fn, kFuncdataInlTree);
  auto nameAt = [&](uint32_t off) { return std::string(cstring(funcnameOff_ + off)); };
  // runtime's inlineUnwinder: the inline index at pc names the innermost
  // inlined callee; its parentPc is an instruction whose position is the call
  // site, and the index there names the next frame out, until -1.
  uint64_t cur = pc;
  for (int guard = 0; tree && guard < 1024; guard++) {
    auto idx = pcdata(*fn, kPcdataInlTreeIndex, cur);
    if (!idx || *idx < 0) break;
    auto e = readInlEntry(*elf_, format_, *tree, *idx, nameAt);
    if (!e) break;
    auto [file, line] = fileLine(*fn, cur);
    frames.push_back({e->name, std::move(file), line, true});
    uint64_t next = fn->entry + static_cast<uint64_t>(static_cast<int64_t>(e->parentPc));
    if (next == cur) break;  // malformed: would loop
    cur = next;
  }
  auto [file, line] = fileLine(*fn, cur);
  frames.push_back({fn->name, std::move(file), line, false});
  return frames;
}

std::vector<InlinedCall> Pclntab::inlinedCalls(const GoFunction& fn) const {
  std::vector<InlinedCall> calls;
  auto tree = funcdataAddress(fn, kFuncdataInlTree);
  if (!tree || kPcdataInlTreeIndex >= funcField(fn.funcOff, 7)) return calls;
  uint32_t off = u32(funcBase(fn.funcOff) + fixedFuncSize() + 4 * kPcdataInlTreeIndex);
  auto indexTable = pcTable(off);
  // The tree has no length: it ends at the highest index the pcdata mentions.
  auto maxIndex = pcln::pcValueMax(indexTable, fn.entry, quantum_);
  if (!maxIndex || *maxIndex < 0) return calls;
  auto nameAt = [&](uint32_t o) { return std::string(cstring(funcnameOff_ + o)); };
  for (int i = 0; i <= *maxIndex; i++) {
    auto e = readInlEntry(*elf_, format_, *tree, i, nameAt);
    if (!e) break;
    InlinedCall c;
    c.callee = std::move(e->name);
    c.parentPc = fn.entry + static_cast<uint64_t>(static_cast<int64_t>(e->parentPc));
    if (format_ == PclnFormat::Go120) {
      // 1.20+ keeps only parentPc: the call site is that pc's position, the
      // parent is that pc's inline index (what the runtime's unwinder does).
      // Filled below, for every call in one walk of each table.
    } else {
      // Before 1.20 the compiler's own record, which stays right even when the
      // inlined body was optimized away and parentPc no longer points into it.
      c.parentIndex = e->parent;
      uint64_t cu = funcField(fn.funcOff, 8);
      uint32_t fileoff = e->file < 0 ? UINT32_MAX : u32(cuOff_ + 4 * (cu + static_cast<uint64_t>(e->file)));
      c.callFile = fileoff == UINT32_MAX ? "?" : std::string(cstring(filetabOff_ + fileoff));
      c.callLine = e->line;
    }
    calls.push_back(std::move(c));
  }
  if (format_ == PclnFormat::Go120 && !calls.empty()) {
    // What pcdata() and fileLine() say at each call's parentPc, each table
    // walked once for all the calls (a caller can have thousands).
    std::vector<uint64_t> pcs;
    pcs.reserve(calls.size());
    for (const auto& c : calls) pcs.push_back(c.parentPc);
    const auto parents = pcln::pcValuesAt(indexTable, fn.entry, pcs, quantum_);
    const auto files = pcln::pcValuesAt(pcTable(funcField(fn.funcOff, 5)), fn.entry, pcs, quantum_);
    const auto lines = pcln::pcValuesAt(pcTable(funcField(fn.funcOff, 6)), fn.entry, pcs, quantum_);
    for (size_t i = 0; i < calls.size(); i++) {
      calls[i].parentIndex = parents[i].value_or(-1);
      auto [file, line] = fileLineOf(fn, files[i], lines[i]);
      calls[i].callFile = std::move(file);
      calls[i].callLine = line;
    }
  }
  // Where each call is the innermost inlined frame.
  pcln::PcValueDecoder d(indexTable, fn.entry, quantum_);
  for (pcln::PcValueRun r; d.next(r);) {
    if (r.value < 0 || r.value >= static_cast<int32_t>(calls.size()) || r.start >= r.end) continue;
    auto& ranges = calls[static_cast<size_t>(r.value)].ranges;
    if (!ranges.empty() && ranges.back().second == r.start) ranges.back().second = r.end;
    else ranges.emplace_back(r.start, r.end);
  }
  return calls;
}

}  // namespace goscope
