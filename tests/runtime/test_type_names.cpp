// TypeNamer on real binaries: names read from the runtime type records in the
// file agree with DWARF's names (zoo, every variant with DWARF); the records
// are found in stripped and PIE builds; and on the esbuild and lefthook
// release binaries (Go 1.16 .. 1.27, $GOSCOPE_GO_SAMPLES) every type in
// moduledata.typelinks gets a plausible name (Go 1.27, which has none: every
// type its itabs name).
#include <doctest/doctest.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "probe/type_names.hpp"
#include "support/go_samples.hpp"
#include "support/run.hpp"
#include "binary/buildinfo.hpp"
#include "binary/go_binary.hpp"

using namespace goscope;

namespace {

bool plausibleName(const std::string& n) {
  if (n.empty()) return false;
  for (unsigned char c : n)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

// moduledata.typelinks, found without knowing the moduledata layout of every
// Go version: the first slice header after moduledata.types whose len == cap
// and whose int32 elements all point into [types, etypes).
std::vector<uint64_t> typelinks(const ElfFile& elf, const Pclntab& pcln) {
  std::vector<uint64_t> out;
  uint64_t types = *pcln.typesStart(), etypes = *pcln.typesEnd();
  // Find the moduledata word that holds `types` followed by `etypes`.
  for (const auto& seg : elf.segments()) {
    if (seg.type != PT_LOAD || !(seg.flags & PF_W)) continue;
    for (uint64_t a = seg.vaddr; a + 16 <= seg.vaddr + seg.filesz; a += 8) {
      if (elf.readPointer(a) != types || elf.readPointer(a + 8) != etypes) continue;
      for (uint64_t w = a + 16; w < a + 16 + 12 * 8; w += 8) {
        auto ptr = elf.readPointer(w), len = elf.readPointer(w + 8), cap = elf.readPointer(w + 16);
        if (!ptr || !len || !cap || *len != *cap || *len < 50 || *len > 1000000) continue;
        auto bytes = elf.readVaddr(*ptr, *len * 4);
        if (!bytes) continue;
        bool all = true;
        std::vector<uint64_t> cand;
        for (uint64_t i = 0; i < *len && all; i++) {
          int32_t off;
          std::memcpy(&off, bytes->data() + 4 * i, 4);
          all = off >= 0 && types + off < etypes;
          cand.push_back(types + off);
        }
        if (all) return cand;
      }
    }
  }
  return out;
}

// Go 1.27 has no typelinks (that slice is empty); its moduledata holds, after
// types, one more word, then etypes and the offset and size of the itabs,
// which fill [types + offset, etypes) (seen in lefthook 2.2.2, go1.27.0).
// Each itab is {inter *interfacetype, _type *_type, hash uint32, pad,
// fun [max(1, methods)]uintptr}; an interfacetype is abi.Type (48 bytes),
// PkgPath, then its Methods slice. The types every itab names, or nothing
// when the walk does not end exactly at etypes.
std::vector<uint64_t> itabTypes(const ElfFile& elf, const Pclntab& pcln) {
  uint64_t types = *pcln.typesStart(), etypes = *pcln.typesEnd();
  auto inTypes = [&](std::optional<uint64_t> a) { return a && *a >= types && *a < etypes; };
  for (const auto& seg : elf.segments()) {
    if (seg.type != PT_LOAD || !(seg.flags & PF_W)) continue;
    for (uint64_t a = seg.vaddr; a + 40 <= seg.vaddr + seg.filesz; a += 8) {
      if (elf.readPointer(a) != types || elf.readPointer(a + 16) != etypes) continue;
      auto off = elf.readPointer(a + 24), size = elf.readPointer(a + 32);
      if (!off || !size || types + *off + *size != etypes) continue;
      std::vector<uint64_t> out;
      uint64_t p = types + *off;
      while (p < etypes) {
        auto inter = elf.readPointer(p), typ = elf.readPointer(p + 8);
        if (!inTypes(inter) || !inTypes(typ)) return {};
        auto methods = elf.readPointer(*inter + 48 + 8 + 8);
        if (!methods || *methods > 1000) return {};
        out.push_back(*inter);
        out.push_back(*typ);
        p += 24 + 8 * std::max<uint64_t>(*methods, 1);
      }
      if (p == etypes) return out;
    }
  }
  return {};
}

}  // namespace

TEST_CASE("type names: the file's runtime type records agree with DWARF (zoo)") {
  for (std::string variant : {"default", "pie", "nopt"}) {
    CAPTURE(variant);
    auto bin = GoBinary::open(test::fixture("zoo", variant));
    REQUIRE(bin);
    const DwarfInfo* d = (*bin)->dwarf();
    REQUIRE(d);
    const Pclntab& pcln = (*bin)->pclntab();
    REQUIRE(pcln.typesStart());
    TypeNamer fileOnly((*bin)->elfShared(), pcln, nullptr, (*bin)->buildInfo()->goVersion);
    TypeNamer withDwarf = TypeNamer::forBinary(**bin);
    CHECK(withDwarf.dwarfNames() > 100);
    int compared = 0, same = 0, shown = 0;
    for (const auto& [name, t] : d->types()) {
      if (!t.runtimeTypeOffset) continue;
      uint64_t addr = *pcln.typesStart() + t.runtimeTypeOffset;
      CHECK(withDwarf.nameAt(addr).value_or("") == name);
      // Runtime names use package names, DWARF import paths: compare the
      // types whose names cannot differ that way. DWARF also qualifies the
      // unexported fields of unnamed structs (`struct { runtime.n int32 }`)
      // and prefixes compiler-made types with `noalg.`; the runtime does not.
      if (name.find('/') != std::string::npos || name.find("struct {") != std::string::npos) continue;
      std::string want = name.starts_with("noalg.") ? name.substr(6) : name;
      compared++;
      auto fromFile = fileOnly.nameAt(addr);
      if (fromFile && *fromFile == want) same++;
      else if (shown++ < 20) MESSAGE("DWARF " << name << ", file " << fromFile.value_or("(none)"));
    }
    MESSAGE(variant << ": " << same << " of " << compared << " runtime type names read from the file equal DWARF's");
    CHECK(compared > 200);
    CHECK(same == compared);
    // Known dynamic types of zoo's interfaces.
    std::set<std::string> names;
    for (const auto& [name, t] : d->types())
      if (t.runtimeTypeOffset) names.insert(fileOnly.nameAt(*pcln.typesStart() + t.runtimeTypeOffset).value_or(""));
    CHECK(names.count("*errors.errorString"));
    CHECK(names.count("*main.Circle"));
    CHECK(names.count("main.Rect"));
    // Outside the type records: nothing.
    CHECK_FALSE(fileOnly.nameAt(*pcln.typesStart() - 8));
    CHECK_FALSE(fileOnly.nameAt(0));
    CHECK_FALSE(fileOnly.nameAt(*pcln.typesEnd()));
  }
}

TEST_CASE("type names: stripped zoo names its types from the file alone") {
  auto bin = GoBinary::open(test::fixture("zoo", "stripped"));
  REQUIRE(bin);
  CHECK_FALSE((*bin)->dwarf());
  REQUIRE((*bin)->pclntab().typesStart());
  TypeNamer n = TypeNamer::forBinary(**bin);
  auto links = typelinks((*bin)->elf(), (*bin)->pclntab());
  REQUIRE(links.size() > 50);
  std::set<std::string> names;
  for (uint64_t a : links) names.insert(n.nameAt(a).value_or(""));
  CHECK_FALSE(names.count(""));
  CHECK(names.count("*errors.errorString"));
  CHECK(names.count("*main.Circle"));
}

TEST_CASE("type names: esbuild and lefthook binaries from npm, Go 1.16 to 1.27") {
  const auto found = goscope::test::goSamples();
  if (!found) return;
  const std::vector<std::filesystem::path>& samples = *found;
  for (const auto& sample : samples) {
    INFO(sample.string());
    auto bin = GoBinary::open(sample.string());
    REQUIRE(bin);
    const Pclntab& pcln = (*bin)->pclntab();
    REQUIRE_MESSAGE(pcln.typesStart(), "moduledata.types not found");
    TypeNamer n = TypeNamer::forBinary(**bin);
    auto links = typelinks((*bin)->elf(), pcln);
    const bool fromItabs = links.empty();  // Go 1.27
    if (fromItabs) links = itabTypes((*bin)->elf(), pcln);
    REQUIRE(links.size() > 50);
    size_t good = 0;
    std::set<std::string> names;
    for (uint64_t a : links) {
      auto name = n.nameAt(a);
      if (name && plausibleName(*name)) good++;
      if (name) names.insert(*name);
    }
    std::string version = (*bin)->buildInfo() ? (*bin)->buildInfo()->goVersion : "?";
    MESSAGE(sample.filename().string() << " (" << version << "): " << good << " of " << links.size()
                                       << std::string(fromItabs ? " types of itabs" : " typelinks") << " named; e.g. "
                                       << *names.begin() << ", " << *names.rbegin());
    CHECK(good == links.size());
    if (fromItabs) {
      CHECK(names.count("error"));  // the interface of *errors.errorString's itab
    } else {
      CHECK(names.count("[]string"));
    }
    CHECK(names.count("*errors.errorString"));
  }
}
