// Pclntab and BuildInfo on Go programs built by other Go versions than the
// local 1.19: the stripped esbuild and lefthook release binaries that
// scripts/fetch-go-samples.sh puts in $GOSCOPE_GO_SAMPLES.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "support/go_samples.hpp"
#include "support/run.hpp"
#include "binary/buildinfo.hpp"
#include "binary/go_binary.hpp"
#include "binary/goid_offset.hpp"
#include "binary/elf_file.hpp"
#include "binary/pclntab.hpp"

using namespace goscope;
using namespace goscope::test;

namespace {

// "go1.20.4" -> 20; 0 when it is not a go1.N version.
int goMinor(const std::string& v) {
  if (!v.starts_with("go1.")) return 0;
  return std::atoi(v.c_str() + 4);
}

std::string_view expectedFormat(int minor) {
  if (minor >= 20) return "1.20";
  if (minor >= 18) return "1.18";
  return "1.16";
}

}  // namespace

TEST_CASE("go versions: the goroutine id offset from runtime.newproc1 agrees with DWARF on every fixture") {
  for (const auto& v : kVariants) {
    auto bin = GoBinary::open(fixture("zoo", v));
    REQUIRE(bin.has_value());
    GoidOffset goid = findGoidOffset(**bin);
    INFO(v << ": " << goid.how);
    REQUIRE(goid.offset.has_value());
    CHECK(*goid.offset == 152u);  // Go 1.19, the local toolchain
    // With DWARF the code is the check ("DWARF, and runtime.newproc1's store ..."); without, the source.
    CHECK(goid.how.find("runtime.newproc1's store at 0x") != std::string::npos);
    CHECK(goid.how.find("says") == std::string::npos);  // no disagreement
  }
}

TEST_CASE("go versions: esbuild and lefthook binaries from npm, Go 1.16 to 1.27") {
  const auto found = goSamples();
  if (!found) return;
  const std::vector<std::filesystem::path>& samples = *found;
  bool haveGo = run("command -v go").exitCode == 0;

  for (const auto& sample : samples) {
    std::string path = sample.string();
    INFO(path);
    auto elf = ElfFile::open(path);
    REQUIRE(elf.has_value());
    const ElfFile& f = **elf;

    auto bi = readBuildInfo(f);
    REQUIRE_MESSAGE(bi.has_value(), (bi ? "" : bi.error().message));
    int minor = goMinor(bi->goVersion);
    CHECK(minor >= 16);
    // esbuild's main package is cmd/esbuild; lefthook's is its module root (v2: /v2).
    const bool esbuild = sample.filename().string().starts_with("esbuild-");
    if (esbuild) CHECK(bi->path == "github.com/evanw/esbuild/cmd/esbuild");
    else CHECK(bi->path.starts_with("github.com/evilmartians/lefthook"));
    const std::string mainFile = esbuild ? "cmd/esbuild/main.go" : "/main.go";
    if (bi->source == "buildinfo" && haveGo) {
      // The blob is what `go version` reads; the local 1.19 reads every format.
      auto r = run("go version " + path);
      CHECK(r.out == path + ": " + bi->goVersion + "\n");
    }

    auto t = Pclntab::read(f);
    REQUIRE_MESSAGE(t.has_value(), (t ? "" : t.error().message));
    CHECK(t->goVersionFormat() == expectedFormat(minor));
    const auto& fns = t->functions();
    CHECK(fns.size() > 1000);
    const auto* text = f.section(".text");
    REQUIRE(text);
    bool increasing = true, inside = true;
    for (size_t i = 0; i < fns.size(); i++) {
      if (i > 0 && fns[i].entry <= fns[i - 1].entry) increasing = false;
      if (fns[i].entry < text->addr || fns[i].end > text->addr + text->size || fns[i].end <= fns[i].entry)
        inside = false;
    }
    CHECK(increasing);
    CHECK(inside);
    CHECK(t->functionNamed("runtime.main"));
    const GoFunction* mainMain = t->functionNamed("main.main");
    REQUIRE(mainMain);
    auto frames = t->symbolize(mainMain->entry);
    REQUIRE(!frames.empty());
    CHECK(frames.back().function == "main.main");
    CHECK_FALSE(frames.back().inlined);
    CHECK(frames.back().file.ends_with(mainFile));
    CHECK(frames.back().line > 0);

    // Inline trees: the 1.16 format has absolute funcdata pointers; later ones
    // need moduledata.gofunc, which must have been found.
    if (minor >= 18) CHECK(t->gofunc().has_value());
    // Each call whose code survived resolves, through symbolize at its
    // parentPc, to its call site inside its parent (1.16-1.19 store parent and
    // call site; 1.20+ derive both from parentPc). Calls whose body was
    // optimized away have no ranges, and a call inside one of those has a
    // parentPc that skips it (Go 1.17-1.19 write it so: seen in net/http's
    // readTransfer, bufio.(*Reader).reset inlined via two eliminated calls).
    size_t withTree = 0, live = 0, dead = 0, inconsistent = 0;
    for (const auto& fn : fns) {
      auto tree = t->inlinedCalls(fn);
      withTree += !tree.empty();
      for (const auto& c : tree) {
        if (c.ranges.empty()) {
          dead++;
          continue;
        }
        live++;
        for (const auto& [lo, hi] : c.ranges) inconsistent += lo < fn.entry || hi > fn.end || lo >= hi;
        REQUIRE(c.parentIndex < static_cast<int>(tree.size()));
        if (c.parentIndex >= 0 && tree[c.parentIndex].ranges.empty()) continue;
        auto at = t->symbolize(c.parentPc);
        std::string parent = c.parentIndex < 0 ? fn.name : tree[c.parentIndex].callee;
        if (at.empty() || at.front().function != parent || at.front().file != c.callFile ||
            at.front().line != c.callLine) {
          inconsistent++;
          MESSAGE(fn.name << ": inlined " << c.callee << " called at " << c.callFile << ":" << c.callLine
                          << " from " << parent << ", but symbolize(parentPc) gives "
                          << (at.empty() ? std::string("nothing") : at.front().function + " " + at.front().file + ":" + std::to_string(at.front().line)));
        }
        // Inside its ranges the innermost frame is the callee.
        auto inner = t->symbolize(c.ranges.front().first);
        inconsistent += inner.empty() || inner.front().function != c.callee || !inner.front().inlined;
      }
    }
    CHECK(withTree > 100);
    CHECK(inconsistent == 0);
    bool mainInlines = false;
    for (const auto& c : t->inlinedCalls(*mainMain)) mainInlines |= c.callFile.ends_with(mainFile);
    if (esbuild) CHECK(mainInlines);  // lefthook 1.x's main.main inlines nothing

    // runtime.g.goid, found in runtime.newproc1's code (these binaries are
    // stripped): 160 in Go 1.23 and 1.24, 152 in every other release
    // (issue #13: assuming 152 read the goroutine's status on 1.23/1.24).
    auto bin = GoBinary::open(path);
    REQUIRE(bin.has_value());
    GoidOffset goid = findGoidOffset(**bin);
    INFO(goid.how);
    REQUIRE(goid.offset.has_value());
    CHECK(*goid.offset == ((minor == 23 || minor == 24) ? 160u : 152u));
    CHECK(goid.how.starts_with("runtime.newproc1's store at 0x"));

    MESSAGE(sample.filename().string()
            << ": " << bi->goVersion << " (build info from " << bi->source << "), pclntab " << t->goVersionFormat()
            << " found by " << t->foundBy() << ", " << fns.size() << " functions, " << withTree
            << " with inline trees (" << live << " live calls, " << dead << " optimized away), " << std::string(f.hasSymtab() ? "has .symtab" : "stripped (no .symtab)")
            << std::string(f.section(".debug_info") ? ", DWARF" : ", no DWARF"));
  }
}

TEST_CASE("go versions: a Go 1.16 program is refused for trace and latency, with the reason, and count works") {
  const char* dir = std::getenv("GOSCOPE_GO_SAMPLES");
  const std::string bin = dir && *dir ? std::string(dir) + "/esbuild-0.11.23" : std::string();
  if (bin.empty() || !std::filesystem::exists(bin)) {
    MESSAGE("GOSCOPE_GO_SAMPLES has no esbuild-0.11.23 (Go 1.16): skipped");
    return;
  }
  // It used to print random bytes for path and goroutine id 78675705856.
  auto trace = runCli("trace -c '" + bin + " --version' path.Clean");
  INFO(trace.err);
  CHECK(trace.exitCode == 4);
  CHECK(trace.err.find("built by go1.16") != std::string::npos);
  CHECK(trace.err.find("passes arguments on the stack") != std::string::npos);
  CHECK(trace.out.empty());
  auto latency = runCli("latency -c '" + bin + " --version' 'main.*'");
  CHECK(latency.exitCode == 4);
  CHECK(latency.err.find("goscope count works on it") != std::string::npos);
  auto count = runCli("count -c '" + bin + " --version' 'main.main'");
  INFO(count.err);
  CHECK(count.exitCode == 0);
  CHECK(count.out.find("main.main") != std::string::npos);
}
