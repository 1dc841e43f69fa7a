// Pclntab and BuildInfo against the Go toolchain's own view of the fixtures:
// `go tool nm` (symbol table), addr2line (DWARF), `go tool objdump`, and
// `go version -m` (build info). Every fixture in every variant.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "support/run.hpp"
#include "binary/buildinfo.hpp"
#include "binary/elf_file.hpp"
#include "binary/pclntab.hpp"

using namespace goscope;
using namespace goscope::test;

namespace {

const std::vector<std::string> kFixtures = {"counter", "fibonacci", "functions", "hello", "zoo"};

struct Loaded {
  std::string path;
  std::shared_ptr<ElfFile> elf;
  std::optional<Pclntab> pcln;
};

// Every fixture binary that exists; fixtures that are not built are reported.
std::vector<std::pair<std::string, std::string>> presentFixtures() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& name : kFixtures)
    for (const auto& variant : kVariants) {
      if (access(fixture(name, variant).c_str(), X_OK) == 0) out.emplace_back(name, variant);
      else MESSAGE("fixture not built, skipped: " << fixture(name, variant));
    }
  REQUIRE_MESSAGE(!out.empty(), "no fixtures under " << fixtureDir());
  return out;
}

Loaded load(const std::string& path) {
  Loaded l{path, nullptr, std::nullopt};
  auto elf = ElfFile::open(path);
  REQUIRE_MESSAGE(elf.has_value(), path);
  l.elf = *elf;
  auto t = Pclntab::read(*l.elf);
  REQUIRE_MESSAGE(t.has_value(), path << ": " << (t ? "" : t.error().message));
  l.pcln.emplace(std::move(t).value());
  return l;
}

// The linker's funcnametab spells a generic (or array-typed) name with the
// outermost [...] collapsed: cmd/link/internal/ld/pcln.go nameParts. Symtab
// names keep them, and assembly functions carry an ".abi0" suffix there.
std::string pclnName(std::string sym) {
  if (sym.size() > 5 && sym.ends_with(".abi0")) sym.resize(sym.size() - 5);
  size_t i = sym.find('['), j = sym.rfind(']');
  if (i != std::string::npos && j != std::string::npos && j > i) sym = sym.substr(0, i) + "[...]" + sym.substr(j + 1);
  return sym;
}

struct NmSym {
  uint64_t addr = 0;
  uint64_t size = 0;
  char type = 0;
  std::string name;
};

std::vector<NmSym> goNm(const std::string& path) {
  auto r = run("go tool nm -size " + path);
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  std::vector<NmSym> out;
  for (const auto& line : splitLines(r.out)) {
    std::istringstream in(line);
    NmSym s;
    std::string addr;
    in >> addr >> s.size >> s.type;
    std::getline(in >> std::ws, s.name);
    if (addr.empty() || s.name.empty()) continue;
    s.addr = std::stoull(addr, nullptr, 16);
    out.push_back(s);
  }
  return out;
}

const NmSym* nmFind(const std::vector<NmSym>& syms, const std::string& name) {
  for (const auto& s : syms)
    if (s.name == name) return &s;
  return nullptr;
}

// Compares the table with the T/t symbols of `nm` (taken from nmPath, which
// is the same binary or one with an identical text layout). Returns the
// number of functions compared.
size_t compareWithNm(const Loaded& l, const std::string& nmPath) {
  auto syms = goNm(nmPath);
  const auto& fns = l.pcln->functions();
  REQUIRE(!fns.empty());
  uint64_t lo = fns.front().entry, hi = fns.back().end;

  // runtime.text / runtime.etext are section markers, not functions: they
  // must bound the table exactly.
  const NmSym* text = nmFind(syms, "runtime.text");
  const NmSym* etext = nmFind(syms, "runtime.etext");
  REQUIRE(text);
  REQUIRE(etext);
  CHECK(text->addr == lo);
  CHECK(etext->addr == hi);

  std::multiset<std::pair<uint64_t, std::string>> want, got;
  std::map<uint64_t, uint64_t> nmSize;
  for (const auto& s : syms) {
    if (s.type != 'T' && s.type != 't') continue;
    if (s.name == "runtime.text" || s.name == "runtime.etext") continue;
    // C code of cgo programs lies outside [runtime.text, runtime.etext) and has no pclntab entry.
    if (s.addr < lo || s.addr >= hi) continue;
    want.emplace(s.addr, pclnName(s.name));
    nmSize[s.addr] = s.size;
  }
  for (const auto& f : fns) got.emplace(f.entry, f.name);
  std::vector<std::pair<uint64_t, std::string>> missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  for (size_t i = 0; i < std::min<size_t>(missing.size(), 5); i++)
    MESSAGE("in nm, not in pclntab: " << std::hex << missing[i].first << " " << missing[i].second);
  for (size_t i = 0; i < std::min<size_t>(extra.size(), 5); i++)
    MESSAGE("in pclntab, not in nm: " << std::hex << extra[i].first << " " << extra[i].second);
  CHECK(missing.empty());
  CHECK(extra.empty());

  // end = next entry; nm's size excludes the alignment padding that end includes.
  for (size_t i = 0; i < fns.size(); i++) {
    INFO(fns[i].name);
    if (i + 1 < fns.size()) CHECK(fns[i].end == fns[i + 1].entry);
    if (auto it = nmSize.find(fns[i].entry); it != nmSize.end()) {
      CHECK(fns[i].entry + it->second <= fns[i].end);
      CHECK(fns[i].end - fns[i].entry - it->second < 64);
    }
  }
  return fns.size();
}

bool sameTextLayout(const ElfFile& a, const ElfFile& b) {
  const auto* ta = a.section(".text");
  const auto* tb = b.section(".text");
  return ta && tb && ta->addr == tb->addr && ta->size == tb->size;
}

// addr2line -i for many pcs: one list of "file:line" per pc, innermost first.
std::vector<std::vector<std::string>> addr2line(const std::string& path, const std::vector<uint64_t>& pcs) {
  char tmpl[] = "/tmp/goscope-pcs-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  {
    std::ofstream f(tmpl);
    for (uint64_t pc : pcs) f << std::hex << "0x" << pc << "\n";
  }
  auto r = run("addr2line -i -a -e " + path + " < " + tmpl);
  unlink(tmpl);
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  std::vector<std::vector<std::string>> out;
  for (auto line : splitLines(r.out)) {
    if (line.starts_with("0x")) {
      out.emplace_back();
      continue;
    }
    if (out.empty()) continue;
    if (auto d = line.find(" (discriminator"); d != std::string::npos) line.resize(d);
    if (line.starts_with("./<autogenerated>")) line = line.substr(2);  // DWARF's comp-dir prefix
    out.back().push_back(line);
  }
  return out;
}

bool unknownLine(const std::string& s) { return s == "?:0" || s.ends_with(":?") || s == "??:0"; }

}  // namespace

TEST_CASE("pclntab: a non-Go ELF file is a BadTarget 'not a Go program'") {
  auto elf = ElfFile::open("/proc/self/exe");  // this C++ test binary
  REQUIRE(elf.has_value());
  auto t = Pclntab::read(**elf);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().kind == ErrorKind::BadTarget);
  CHECK(t.error().message.ends_with(": not a Go program (no .gopclntab)"));
  auto bi = readBuildInfo(**elf);
  REQUIRE_FALSE(bi.has_value());
  CHECK(bi.error().kind == ErrorKind::BadTarget);
}

TEST_CASE("pclntab: functions equal go tool nm's text symbols, names and addresses") {
  for (const auto& [name, variant] : presentFixtures()) {
    std::string path = fixture(name, variant);
    INFO(path);
    Loaded l = load(path);
    CHECK(l.pcln->goVersionFormat() == "1.18");  // the local toolchain is Go 1.19
    if (l.elf->hasSymtab()) {
      size_t n = compareWithNm(l, path);
      MESSAGE(path << ": " << n << " functions equal nm's, table found by " << l.pcln->foundBy());
    } else {
      // -s -w leaves no symbols. The code is the default build's, byte for byte
      // except rip-relative displacements into the moved rodata (the recorded
      // -ldflags makes build info longer), so when .text has the same address
      // and size the function layout is the same: compare with the default nm.
      Loaded def = load(fixture(name, "default"));
      REQUIRE(sameTextLayout(*l.elf, *def.elf));
      size_t n = compareWithNm(l, fixture(name, "default"));
      MESSAGE(path << ": " << n << " functions equal the default build's nm");
    }
  }
}

TEST_CASE("pclntab: textStart is runtime.text and gofunc is go.func.* (PIE: from relocations)") {
  for (const auto& [name, variant] : presentFixtures()) {
    std::string path = fixture(name, variant);
    INFO(path);
    Loaded l = load(path);
    // Internally linked programs start .text with runtime.text.
    REQUIRE(l.elf->section(".text"));
    CHECK(l.pcln->textStart() == l.elf->section(".text")->addr);
    REQUIRE(l.pcln->gofunc().has_value());
    if (!l.elf->hasSymtab()) continue;
    auto syms = goNm(path);
    CHECK(l.pcln->textStart() == nmFind(syms, "runtime.text")->addr);
    const NmSym* gofunc = nmFind(syms, "go.func.*");
    REQUIRE(gofunc);
    CHECK(*l.pcln->gofunc() == gofunc->addr);
  }
}

TEST_CASE("pclntab: entry file:line and symbolize agree with DWARF (addr2line -i)") {
  for (const auto& [name, variant] : presentFixtures()) {
    if (variant == "stripped") continue;  // no DWARF to compare with
    std::string path = fixture(name, variant);
    INFO(path);
    Loaded l = load(path);
    const auto& fns = l.pcln->functions();

    // Entries: the function's own frame, at the position DWARF gives.
    std::vector<uint64_t> entries;
    for (const auto& f : fns) entries.push_back(f.entry);
    auto dwarf = addr2line(path, entries);
    REQUIRE(dwarf.size() == fns.size());
    for (size_t i = 0; i < fns.size(); i++) {
      INFO(fns[i].name);
      auto frames = l.pcln->symbolize(fns[i].entry);
      REQUIRE(!frames.empty());
      CHECK(frames.back().function == fns[i].name);
      CHECK_FALSE(frames.back().inlined);
      REQUIRE(!dwarf[i].empty());
      CHECK(frames.front().file + ":" + std::to_string(frames.front().line) == dwarf[i].front());
      if (frames.size() == 1) CHECK(fns[i].file + ":" + std::to_string(fns[i].line) == dwarf[i].front());
    }

    // Three pcs inside every function: the whole inline chain. Differences
    // allowed: both sides unknown (alignment padding after a function's last
    // instruction is in no table), and an <autogenerated> wrapper's own frame,
    // which DWARF leaves out when the wrapped body was inlined into it.
    std::vector<uint64_t> pcs;
    for (const auto& f : fns)
      for (int k = 1; k <= 3; k++) pcs.push_back(f.entry + (f.end - f.entry) * k / 4);
    auto chains = addr2line(path, pcs);
    REQUIRE(chains.size() == pcs.size());
    size_t compared = 0, withInline = 0, mismatches = 0;
    for (size_t i = 0; i < pcs.size(); i++) {
      std::vector<std::string> ours;
      for (const auto& fr : l.pcln->symbolize(pcs[i])) ours.push_back(fr.file + ":" + std::to_string(fr.line));
      if (ours.size() == 1 && unknownLine(ours[0]) && chains[i].size() == 1 && unknownLine(chains[i][0])) continue;
      if (ours.size() == chains[i].size() + 1 && ours.back() == "<autogenerated>:1") ours.pop_back();
      compared++;
      if (ours.size() > 1) withInline++;
      if (ours != chains[i]) {
        mismatches++;
        std::string a, b;
        for (auto& s : ours) a += " " + s;
        for (auto& s : chains[i]) b += " " + s;
        if (mismatches <= 5) MESSAGE(std::hex << pcs[i] << " ours:" << a << " | dwarf:" << b);
      }
    }
    CHECK(mismatches == 0);
    if (variant == "nopt") {
      for (const auto& f : fns)
        if (f.name.starts_with("main.")) CHECK(l.pcln->inlinedCalls(f).empty());
    } else {
      CHECK(withInline > 0);
    }
    MESSAGE(path << ": " << compared << " pcs agree with DWARF, " << withInline << " of them inside inlined calls");
  }
}

TEST_CASE("pclntab: main.* functions match go tool objdump's TEXT lines") {
  for (const auto& [name, variant] : presentFixtures()) {
    if (variant == "stripped") continue;  // objdump needs the symbol table
    std::string path = fixture(name, variant);
    INFO(path);
    Loaded l = load(path);
    auto r = run("go tool objdump -s '^main\\.' " + path);
    REQUIRE(r.exitCode == 0);
    auto lines = splitLines(r.out);
    size_t seen = 0;
    bool sawMain = false;
    for (size_t i = 0; i + 1 < lines.size(); i++) {
      // "TEXT main.add(SB) /abs/path/main.go" then "  main.go:24\t0x48c040\t..."
      if (!lines[i].starts_with("TEXT ")) continue;
      std::string fn = lines[i].substr(5, lines[i].find("(SB)") - 5);
      std::string file = lines[i].substr(lines[i].find("(SB) ") + 5);
      std::istringstream next(lines[i + 1]);
      std::string pos, addr;
      next >> pos >> addr;
      uint64_t entry = std::stoull(addr, nullptr, 16);
      const GoFunction* f = l.pcln->functionAt(entry);
      REQUIRE(f);
      CHECK(f->name == pclnName(fn));  // generic instantiations all read "pkg.F[...]"
      CHECK(f->entry == entry);
      seen++;
      sawMain |= fn == "main.main";
      // Go 1.19's objdump prints no positions for PIE ("TEXT main.x(SB) " then
      // ":0"): its debug/gosym uses the wrong text base there. DWARF agrees
      // with us on PIE (see the addr2line test), so only names are compared.
      if (variant == "pie" && pos == ":0") continue;
      CHECK(f->file == file);
      CHECK(pos == file.substr(file.rfind('/') + 1) + ":" + std::to_string(f->line));
    }
    CHECK(sawMain);
    MESSAGE(path << ": " << seen << " main.* functions match objdump");
  }
}

TEST_CASE("pclntab: inline trees are consistent with symbolize — functions' main inlines fmt.Printf") {
  for (const auto& [name, variant] : presentFixtures()) {
    std::string path = fixture(name, variant);
    INFO(path);
    Loaded l = load(path);
    size_t calls = 0;
    for (const auto& f : l.pcln->functions()) {
      auto tree = l.pcln->inlinedCalls(f);
      for (size_t i = 0; i < tree.size(); i++) {
        const auto& c = tree[i];
        INFO(f.name << " inline #" << i << " " << c.callee);
        CHECK(c.parentPc >= f.entry);
        CHECK(c.parentPc < f.end);
        CHECK(c.parentIndex < static_cast<int>(i));  // parents come first
        // At parentPc the innermost frame is the call site; the frame above it
        // is the parent inlined call, or the function itself.
        auto frames = l.pcln->symbolize(c.parentPc);
        REQUIRE(!frames.empty());
        CHECK(frames.front().file == c.callFile);
        CHECK(frames.front().line == c.callLine);
        if (c.parentIndex < 0) CHECK(frames.front().function == f.name);
        else CHECK(frames.front().function == tree[c.parentIndex].callee);
        calls++;
      }
    }
    if (variant != "nopt") CHECK(calls > 100);
    if (name == "functions" && variant == "default") {
      const GoFunction* m = l.pcln->functionNamed("main.main");
      REQUIRE(m);
      bool printf = false;
      for (const auto& c : l.pcln->inlinedCalls(*m))
        printf |= c.callee == "fmt.Printf" && c.parentIndex == -1 && c.callFile.ends_with("/functions/main.go");
      CHECK(printf);
    }
  }
}

TEST_CASE("buildinfo: Go version and main path equal go version -m") {
  for (const auto& [name, variant] : presentFixtures()) {
    std::string path = fixture(name, variant);
    INFO(path);
    auto elf = ElfFile::open(path);
    REQUIRE(elf.has_value());
    auto bi = readBuildInfo(**elf);
    REQUIRE_MESSAGE(bi.has_value(), (bi ? "" : bi.error().message));
    CHECK(bi->source == "buildinfo");

    auto r = run("go version -m " + path);
    REQUIRE(r.exitCode == 0);
    auto lines = splitLines(r.out);
    REQUIRE(!lines.empty());
    // "PATH: go1.19.8"
    CHECK(lines[0] == path + ": " + bi->goVersion);
    std::vector<std::pair<std::string, std::string>> settings;
    for (const auto& line : lines) {
      std::istringstream in(line);
      std::string kind;
      in >> kind;
      if (kind == "path") CHECK(line == "\tpath\t" + bi->path);
      if (kind == "mod") CHECK(line.starts_with("\tmod\t" + bi->mainModule + "\t" + bi->mainVersion));
      if (kind == "build") {
        std::string kv = line.substr(7);
        settings.emplace_back(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
      }
    }
    CHECK(bi->path == "goscope.fixtures/" + name);
    REQUIRE(settings.size() == bi->settings.size());
    for (size_t i = 0; i < settings.size(); i++) {
      CHECK(settings[i].first == bi->settings[i].first);
      // go version -m prints values quoted when they contain spaces.
      std::string v = bi->settings[i].second;
      CHECK((settings[i].second == v || settings[i].second == "\"" + v + "\""));
    }
  }
}

TEST_CASE("pclntab: without section or symbol names the table is found by scanning segments") {
  // objcopy renames .gopclntab in a stripped build: no section and no symbol
  // names the table any more, as in binaries whose section headers were mangled.
  std::string src = fixture("hello", "stripped");
  if (access(src.c_str(), R_OK) != 0) {
    MESSAGE("fixture not built, skipped: " << src);
    return;
  }
  char tmpl[] = "/tmp/goscope-renamed-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  auto r = run(std::string("objcopy --rename-section .gopclntab=.renamed ") + src + " " + tmpl);
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  Loaded renamed = load(tmpl);
  Loaded orig = load(src);
  unlink(tmpl);
  CHECK(renamed.elf->section(".gopclntab") == nullptr);
  CHECK(renamed.pcln->foundBy() == "segment scan");
  CHECK(renamed.pcln->tableAddress() == orig.pcln->tableAddress());
  CHECK(renamed.pcln->gofunc() == orig.pcln->gofunc());
  REQUIRE(renamed.pcln->functions().size() == orig.pcln->functions().size());
  for (size_t i = 0; i < orig.pcln->functions().size(); i++) {
    const auto& a = renamed.pcln->functions()[i];
    const auto& b = orig.pcln->functions()[i];
    CHECK((a.name == b.name && a.entry == b.entry && a.end == b.end && a.file == b.file && a.line == b.line));
  }
}
