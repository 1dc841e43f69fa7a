// Debug info from elsewhere (issue #16 item 2, docs/debug-info.md): a
// stripped build gets its signatures, typed arguments and results and its
// package variables' types from a separate file - given with --debug-file,
// or found by GNU build-id under --debug-dir or through .gnu_debuglink - and
// a file of another build is refused. The fixtures are objcopy's work on the
// default builds (scripts/build-fixtures.sh: splitdebug/, buildid/).
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <regex>
#include <thread>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "binary/build_ids.hpp"
#include "binary/elf_file.hpp"

using namespace goscope::test;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// func, args and results of each call, pointers masked (they vary per run).
std::vector<std::string> typedCalls(const std::string& out) {
  static const std::regex addr("0x[0-9a-f]+");
  std::vector<std::string> v;
  for (auto& o : callObjects(out)) {
    boost::json::object k{{"func", o["func"]}};
    if (o.contains("args")) k["args"] = o["args"];
    if (o.contains("results")) k["results"] = o["results"];
    v.push_back(std::regex_replace(boost::json::serialize(k), addr, "0x…"));
  }
  return v;
}

const char* kZooFunctions =
    " 'main.parsePositive' 'main.(*Server).Handle' 'main.divmod' 'main.greet' 'main.checkRecord' 'main.reverseStrings'";

// A fresh directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/goscope-debugfile-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

boost::json::object infoJson(const std::string& args) {
  auto r = runCli("info --json " + args);
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  return boost::json::parse(r.out).as_object();
}

std::string source(const boost::json::object& info) {
  return std::string(info.at("debug_info").as_object().at("source").as_string());
}
std::string path(const boost::json::object& info) {
  const auto& p = info.at("debug_info").as_object().at("path");
  return p.is_null() ? std::string() : std::string(p.as_string());
}

}  // namespace

TEST_CASE("debug file: a stripped zoo traced with --debug-file prints the typed arguments and results of the unstripped build") {
  const std::string stripped = fixture("zoo-stripped", "splitdebug");
  auto full = runCli("trace --json -c '" + fixture("zoo") + " --rounds 1'" + kZooFunctions);
  REQUIRE_MESSAGE(full.exitCode == 0, full.err);
  const auto want = typedCalls(full.out);
  REQUIRE(want.size() == 9);  // divmod, greet, reverseStrings, checkRecord, parsePositive x3, Handle x2
  CHECK(has(full.out, "\"results\":[{\"Status\":200,\"Body\":\"api:/users#7\"},null]"));

  // Split by objcopy --only-keep-debug (NOBITS .text: matched by the Go build ID).
  auto split = runCli("trace --json -c '" + stripped + " --rounds 1' --debug-file " + fixture("zoo.debug", "splitdebug") +
                      kZooFunctions);
  REQUIRE_MESSAGE(split.exitCode == 0, split.err);
  CHECK(typedCalls(split.out) == want);
  // The unstripped twin as the debug file (matched by Go build ID and .text).
  auto twin = runCli("trace --json -c '" + stripped + " --rounds 1' --debug-file " + fixture("zoo") + kZooFunctions);
  REQUIRE_MESSAGE(twin.exitCode == 0, twin.err);
  CHECK(typedCalls(twin.out) == want);

  // Without it the stripped build has no types: the comparison above can fail.
  auto bare = runCli("trace --json -c '" + stripped + " --rounds 1'" + kZooFunctions);
  INFO("bare: " << bare.exitCode << " " << bare.err);
  CHECK(typedCalls(bare.out) != want);
}

TEST_CASE("debug file: list and info of a stripped binary show its signatures and say where the DWARF came from") {
  const std::string stripped = fixture("zoo-stripped", "splitdebug");
  const std::string dbg = fixture("zoo.debug", "splitdebug");
  auto l = runCli("list -b " + stripped + " --debug-file " + dbg + " 'main.divmod'");
  REQUIRE_MESSAGE(l.exitCode == 0, l.err);
  CHECK(has(l.out, "main.divmod(a int, b int) (q int, r int)"));
  auto bare = runCli("list -b " + stripped + " 'main.divmod'");
  REQUIRE(bare.exitCode == 0);
  CHECK(!has(bare.out, "(a int, b int)"));

  auto withFile = infoJson("-b " + stripped + " --debug-file " + dbg);
  CHECK(source(withFile) == "debug-file");
  CHECK(path(withFile) == dbg);
  CHECK(withFile.at("dwarf").as_bool());
  auto embedded = infoJson("-b " + fixture("zoo"));
  CHECK(source(embedded) == "embedded");
  auto none = infoJson("-b " + stripped);
  CHECK(source(none) == "none");
  CHECK(path(none).empty());
  CHECK(!none.at("dwarf").as_bool());
  auto text = runCli("info -b " + stripped + " --debug-file " + dbg);
  CHECK(has(text.out, "debug info:     " + dbg + " (debug-file)\n"));
}

TEST_CASE("debug file: a debug file of another build is refused with what differs") {
  const std::string stripped = fixture("zoo-stripped", "splitdebug");
  const std::string other = fixture("counter.debug", "splitdebug");
  auto r = runCli("info -b " + stripped + " --debug-file " + other);
  CHECK(r.exitCode == 4);
  CHECK(r.out.empty());
  CHECK(std::regex_match(r.err, std::regex("goscope: --debug-file " + other + " does not belong to " + stripped +
                                           ": its Go build ID is \\S+…, the binary's \\S+… \\(hint: give the debug file "
                                           "split from this very build \\(objcopy --only-keep-debug\\), or its "
                                           "unstripped twin\\)\n")));
  // Every subcommand refuses it before anything is attached.
  auto t = runCli("trace -c '" + stripped + " --rounds 1' main.divmod --debug-file " + other);
  CHECK(t.exitCode == 4);
  CHECK(has(t.err, "does not belong to"));
  // A file without DWARF.
  auto n = runCli("list -b " + stripped + " --debug-file " + fixture("counter-stripped", "splitdebug"));
  CHECK(n.exitCode == 4);
  CHECK(n.err == "goscope: --debug-file " + fixture("counter-stripped", "splitdebug") +
                     " has no DWARF debug info (no .debug_info section) (hint: give the unstripped build, or the file "
                     "objcopy --only-keep-debug made of it)\n");
  // No such file.
  auto m = runCli("info -b " + stripped + " --debug-file /nonexistent/zoo.debug");
  CHECK(m.exitCode == 3);
  CHECK(m.err == "goscope: --debug-file /nonexistent/zoo.debug: no such file\n");
}

TEST_CASE("debug file: found by GNU build-id under --debug-dir") {
  const std::string stripped = fixture("functions-stripped", "buildid");
  auto elf = goscope::ElfFile::open(stripped);
  REQUIRE(elf);
  auto id = goscope::gnuBuildId(**elf);
  REQUIRE(id);
  REQUIRE(id->size() == 40);
  TempDir dir;
  const fs::path dbg = dir.path / ".build-id" / id->substr(0, 2) / (id->substr(2) + ".debug");
  fs::create_directories(dbg.parent_path());
  fs::copy_file(fixture("functions.debug", "buildid"), dbg);

  auto info = infoJson("-b " + stripped + " --debug-dir " + dir.path.string());
  CHECK(source(info) == "build-id");
  CHECK(path(info) == dbg.string());
  auto t = runCli("trace --json -c '" + stripped + "' main.add --debug-dir " + dir.path.string());
  REQUIRE_MESSAGE(t.exitCode == 0, t.err);
  auto calls = typedCalls(t.out);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0] == R"({"func":"main.add","args":{"x":42,"y":13},"results":[55]})");
  // Not there: nothing found (the default directory, /usr/lib/debug, has no such id).
  CHECK(source(infoJson("-b " + stripped)) == "none");
  // Another build's file under that id is skipped with a warning.
  fs::remove(dbg);
  fs::copy_file(fixture("functions.debug", "splitdebug"), dbg);
  auto wrong = runCli("info --json -b " + stripped + " --debug-dir " + dir.path.string());
  REQUIRE(wrong.exitCode == 0);
  CHECK(source(boost::json::parse(wrong.out).as_object()) == "none");
  CHECK(has(wrong.err, "ignoring " + dbg.string() + ": "));
}

TEST_CASE("debug file: found through .gnu_debuglink, next to the binary or in .debug/, its CRC32 checked") {
  const std::string linked = fixture("functions-linked", "splitdebug");
  auto info = infoJson("-b " + linked);
  CHECK(source(info) == "debuglink");
  CHECK(path(info) == fixture("functions.debug", "splitdebug"));
  // -v says which file and how it was matched.
  auto v = runCli("-v list -b " + linked + " main.add");
  CHECK(has(v.err, "debug info from " + fixture("functions.debug", "splitdebug") +
                       " (debuglink; matched by CRC32, Go build ID)"));
  auto t = runCli("trace --json -c '" + linked + "' main.add");
  REQUIRE_MESSAGE(t.exitCode == 0, t.err);
  auto calls = typedCalls(t.out);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0] == R"({"func":"main.add","args":{"x":42,"y":13},"results":[55]})");

  TempDir dir;
  fs::copy_file(linked, dir.path / "functions-linked");
  fs::create_directories(dir.path / ".debug");
  fs::copy_file(fixture("functions.debug", "splitdebug"), dir.path / ".debug" / "functions.debug");
  auto sub = infoJson("-b " + (dir.path / "functions-linked").string());
  CHECK(source(sub) == "debuglink");
  CHECK(path(sub) == (dir.path / ".debug" / "functions.debug").string());

  // Another file under the linked name: its CRC32 differs, it is skipped.
  fs::remove(dir.path / ".debug" / "functions.debug");
  fs::copy_file(fixture("counter.debug", "splitdebug"), dir.path / "functions.debug");
  auto wrong = runCli("info --json -b " + (dir.path / "functions-linked").string());
  REQUIRE(wrong.exitCode == 0);
  CHECK(source(boost::json::parse(wrong.out).as_object()) == "none");
  CHECK(has(wrong.err, "its CRC32 is"));
}

TEST_CASE("debug file: a direct read of a package variable works through the debug file, Delve is refused with why") {
  const std::string stripped = fixture("counter-stripped", "splitdebug");
  const std::string dbg = fixture("counter.debug", "splitdebug");
  Child c({stripped, "--duration", "60"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // main.counter has counted by then
  const std::string pid = std::to_string(c.pid());

  auto r = runCli("read --explain -p " + pid + " main.counter --debug-file " + dbg);
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  CHECK(has(r.err, "plan: direct-read"));
  CHECK(has(r.err, "DWARF from the separate file " + dbg));
  std::smatch m;
  REQUIRE(std::regex_match(r.out, m, std::regex(R"(main\.counter = (\d+) \(int64\)\n)")));
  CHECK(std::stoll(m[1]) > 0);

  // Delve reads only the executable's own DWARF: forced, it is refused with the reason.
  auto d = runCli("read --strategy delve -p " + pid + " main.counter --debug-file " + dbg);
  CHECK(d.exitCode == 4);
  CHECK(has(d.err, "the binary's DWARF is in a separate debug file (" + dbg + "), which Delve cannot use"));
  // break goes to BPF and --explain says why.
  auto b = runCli("break --explain -n 1 -p " + pid + " main.doWork --debug-file " + dbg);
  INFO("break: " << b.err);
  CHECK(b.exitCode == 0);
  CHECK(has(b.err, "plan: bpf"));
  CHECK(has(b.err, "Delve cannot serve this target: the binary's DWARF is in a separate debug file"));
  CHECK(c.alive());
}
