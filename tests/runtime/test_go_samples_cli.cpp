// The CLI on Go programs built by every Go release from 1.16 to 1.27: the
// stripped npm binaries scripts/fetch-go-samples.sh puts in
// $GOSCOPE_GO_SAMPLES (esbuild, and lefthook for 1.21, 1.24 and 1.27).
// `goscope info` finds runtime.g.goid in runtime.newproc1's code, and a trace
// of a function each goroutine of a concurrent workload calls shows each
// goroutine's own id (issue #13: assuming offset 152 printed the goroutine's
// status, 2, for every call on Go 1.23 and 1.24).
#include <doctest/doctest.h>

#include <unistd.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;

namespace {

struct Sample {
  std::string file;        // in $GOSCOPE_GO_SAMPLES
  std::string goVersion;   // what `go version FILE` says (scripts/fetch-go-samples.sh)
  uint64_t goidOffset;     // runtime.g.goid: 160 in Go 1.23 and 1.24, 152 in every other release
};

const Sample kSamples[] = {
    {"esbuild-0.11.23", "go1.16.3", 152}, {"esbuild-0.13.15", "go1.17.2", 152},
    {"esbuild-0.14.39", "go1.18.1", 152}, {"esbuild-0.15.18", "go1.19.3", 152},
    {"esbuild-0.17.19", "go1.20.4", 152}, {"lefthook-1.5.5", "go1.21.4", 152},
    {"esbuild-0.23.1", "go1.22.5", 152},  {"esbuild-0.25.12", "go1.23.12", 160},
    {"lefthook-1.13.0", "go1.24.7", 160}, {"esbuild-0.27.7", "go1.25.7", 152},
    {"esbuild-0.28.2", "go1.26.5", 152},  {"lefthook-2.2.2", "go1.27.0", 152},
};

// $GOSCOPE_GO_SAMPLES, or "" (and a MESSAGE) when unset.
std::string samplesDir() {
  const char* dir = std::getenv("GOSCOPE_GO_SAMPLES");
  if (!dir || !*dir) {
    MESSAGE("GOSCOPE_GO_SAMPLES unset: skipped (run scripts/fetch-go-samples.sh DIR and set it to DIR)");
    return "";
  }
  return dir;
}

// DIR/file if it is there, else "" (and a MESSAGE).
std::string samplePath(const std::string& dir, const Sample& s) {
  std::string path = dir + "/" + s.file;
  if (access(path.c_str(), X_OK) != 0) {
    MESSAGE(path << " (" << s.goVersion << ") missing: skipped");
    return "";
  }
  return path;
}

// The (final) object of `func` in count/latency --json output; null when absent.
boost::json::object forFunc(const std::string& out, const std::string& func) {
  boost::json::object found;
  for (auto& o : callObjects(out))
    if (o.contains("func") && o["func"].as_string() == func) found = o;
  return found;
}

// A fresh directory under /tmp, removed with its contents on destruction.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/goscope-samples-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

// esbuild's workload: entry.js importing m1.js .. m30.js, one constant each.
const int kModules = 30;
void writeBundleProject(const TempDir& project) {
  std::string entry, sum = "0";
  for (int i = 1; i <= kModules; i++) {
    std::string v = "v" + std::to_string(i);
    project.write("m" + std::to_string(i) + ".js", "export const " + v + " = " + std::to_string(i) + ";\n");
    entry += "import { " + v + " } from './m" + std::to_string(i) + ".js';\n";
    sum += " + " + v;
  }
  project.write("entry.js", entry + "console.log(" + sum + ");\n");
}
std::string bundleCommand(const std::string& esbuild, const TempDir& project, const std::string& out) {
  return esbuild + " --bundle " + (project.path / "entry.js").string() + " --outfile=" + out;
}

bool haveGit() {
  if (run("command -v git").exitCode == 0) return true;
  MESSAGE("git not found: lefthook samples skipped (lefthook needs a git repository)");
  return false;
}

// lefthook's workload: a git repository whose hook "stress" runs 20 commands
// (`true`) in parallel.
const int kCommands = 20;
void writeHookRepo(const TempDir& repo) {
  REQUIRE(run("git init -q " + repo.path.string()).exitCode == 0);
  std::string config = "stress:\n  parallel: true\n  commands:\n";
  for (int i = 1; i <= kCommands; i++) config += "    c" + std::to_string(i) + ":\n      run: 'true'\n";
  repo.write("lefthook.yml", config);
}
// goscope ARGS run in the repository: lefthook works on the current directory's.
std::string hookCommand(const TempDir& repo, const std::string& goscopeArgs) {
  return "cd " + repo.path.string() + " && " + cliPath() + " " + goscopeArgs;
}

// What the trace saw, and checks that hold for any goroutine id: each > 0
// (goroutine 0 is no goroutine), < 10^7 (these short runs start hundreds),
// and not one value for every call (the offset-152 bug read the status, 2).
std::multiset<int64_t> checkedGoids(const std::vector<boost::json::object>& calls) {
  std::multiset<int64_t> ids;
  for (const auto& o : calls) {
    REQUIRE(o.contains("goid"));
    int64_t id = o.at("goid").to_number<int64_t>();
    CHECK(id > 0);
    CHECK(id < 10'000'000);
    ids.insert(id);
  }
  if (calls.size() > 1) CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() > 1);
  return ids;
}

}  // namespace

TEST_CASE("go samples: info prints the goroutine id offset from runtime.newproc1 on Go 1.16 to 1.27") {
  std::string dir = samplesDir();
  if (dir.empty()) return;
  size_t tested = 0;
  for (const auto& s : kSamples) {
    std::string path = samplePath(dir, s);
    if (path.empty()) continue;
    ++tested;
    CAPTURE(path);
    auto text = runCli("info -b " + path);
    REQUIRE_MESSAGE(text.exitCode == 0, text.err);
    CHECK(text.out.find("go version:     " + s.goVersion + "\n") != std::string::npos);
    const std::string line = "runtime.g.goid: offset " + std::to_string(s.goidOffset) + " (runtime.newproc1's store at 0x";
    CHECK_MESSAGE(text.out.find(line) != std::string::npos, text.out);

    auto json = runCli("info --json -b " + path);
    REQUIRE_MESSAGE(json.exitCode == 0, json.err);
    auto o = boost::json::parse(json.out).as_object();
    CHECK(o["go_version"].as_string() == s.goVersion);
    REQUIRE(o["goid_offset"].is_int64());
    CHECK(o["goid_offset"].as_int64() == static_cast<int64_t>(s.goidOffset));
    std::string how(o["goid_offset_source"].as_string());
    REQUIRE(how.starts_with("runtime.newproc1's store at 0x"));

    // objdump decodes the instruction at that address as a store at
    // displacement <offset> from the new g (mov %reg,0x98(%reg) or 0xa0).
    uint64_t at = std::stoull(how.substr(how.find("0x")), nullptr, 16);
    std::ostringstream cmd;
    cmd << "objdump -d --no-show-raw-insn --start-address=0x" << std::hex << at << " --stop-address=0x" << at + 16
        << " " << path;
    auto od = run(cmd.str());
    REQUIRE(od.exitCode == 0);
    std::ostringstream want, disp;
    want << std::hex << at << ":";
    disp << ",0x" << std::hex << s.goidOffset << "(%r";
    std::string insn;
    for (const auto& l : splitLines(od.out))
      if (l.find(want.str()) != std::string::npos && l.find("mov") != std::string::npos) insn = l;
    CHECK_MESSAGE(insn.find(disp.str()) != std::string::npos, "objdump at 0x" << std::hex << at << ": " << od.out);
    MESSAGE(s.file << " (" << s.goVersion << "): goid at " << s.goidOffset << ", store:" << insn);
  }
  if (tested == 0) MESSAGE("no Go sample in " << dir << ": skipped");
}

// list reads pclntab; count probes main.main, entered once per run (Go 1.16
// included: only trace and latency are refused there).
TEST_CASE("go samples: list and count main.main on Go 1.16 to 1.27") {
  std::string dir = samplesDir();
  if (dir.empty()) return;
  size_t tested = 0;
  for (const auto& s : kSamples) {
    std::string path = samplePath(dir, s);
    if (path.empty()) continue;
    ++tested;
    CAPTURE(path);
    auto list = runCli("list --json -b " + path + " 'runtime.mallocgc'");
    REQUIRE_MESSAGE(list.exitCode == 0, list.err);
    auto fn = forFunc(list.out, "runtime.mallocgc");
    REQUIRE(fn.contains("returns"));
    CHECK(!fn["returns"].as_array().empty());
    // esbuild --version, lefthook version: print and return.
    const std::string version = s.file.starts_with("esbuild-") ? " --version" : " version";
    auto count = runCli("count --json -c '" + path + version + "' main.main");
    REQUIRE_MESSAGE(count.exitCode == 0, count.err);
    auto c = forFunc(count.out, "main.main");
    REQUIRE(c.contains("count"));
    CHECK(c["count"].to_number<uint64_t>() == 1);
  }
  if (tested == 0) MESSAGE("no Go sample in " << dir << ": skipped");
}

// esbuild parses every file of a bundle on a goroutine of its own
// (bundler.parseFile, started per file), and calls js_parser.Parse there
// once: 30 modules and the entry give 31+ calls on as many goroutines.
TEST_CASE("go samples: trace of js_parser.Parse while esbuild bundles 30 files shows one goroutine id per file") {
  std::string dir = samplesDir();
  if (dir.empty()) return;
  TempDir project;
  writeBundleProject(project);
  const std::string kParse = "github.com/evanw/esbuild/internal/js_parser.Parse";
  size_t tested = 0;
  for (const auto& s : kSamples) {
    if (!s.file.starts_with("esbuild-") || s.goVersion.starts_with("go1.16.")) continue;
    std::string path = samplePath(dir, s);
    if (path.empty()) continue;
    ++tested;
    CAPTURE(path);
    const std::string out = (project.path / ("out-" + s.file + ".js")).string();
    auto r = runCli("trace --json -c '" + bundleCommand(path, project, out) + "' " + kParse);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(std::filesystem::file_size(out) > 0);  // esbuild did bundle
    auto calls = callObjects(r.out);
    CHECK(calls.size() >= kModules + 1);
    auto ids = checkedGoids(calls);
    // Each parse on a goroutine of its own: as many ids as calls.
    CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() == calls.size());
    // latency sees each of those calls end (its return probes are at Parse's RETs).
    auto lat = runCli("latency --json -c '" + bundleCommand(path, project, out) + "' " + kParse);
    REQUIRE_MESSAGE(lat.exitCode == 0, lat.err);
    auto l = forFunc(lat.out, kParse);
    REQUIRE(l.contains("count"));
    CHECK(l["count"].to_number<uint64_t>() == calls.size());
    CHECK(l["mismatches"].to_number<uint64_t>() == 0);
    MESSAGE(s.file << " (" << s.goVersion << "): " << calls.size() << " calls, goroutines " << *ids.begin() << ".."
                   << *ids.rbegin());
  }
  if (tested == 0) MESSAGE("no esbuild sample for Go >= 1.17 in " << dir << ": skipped");
}

// lefthook runs the commands of a `parallel: true` hook each on a goroutine
// of its own, and each starts its process with os/exec.(*Cmd).Start (git
// calls it too, on other goroutines).
TEST_CASE("go samples: trace of exec.Cmd.Start while lefthook runs 20 parallel commands shows 20+ goroutine ids") {
  std::string dir = samplesDir();
  if (dir.empty()) return;
  if (!haveGit()) return;
  TempDir repo;
  writeHookRepo(repo);
  size_t tested = 0;
  for (const auto& s : kSamples) {
    if (!s.file.starts_with("lefthook-")) continue;
    std::string path = samplePath(dir, s);
    if (path.empty()) continue;
    ++tested;
    CAPTURE(path);
    // lefthook works in the current directory's repository: goscope starts it there.
    // The binary is stripped: the signature gives the receiver and the result.
    auto r = run(hookCommand(repo, "trace --json -c '" + path + " run stress' 'os/exec.(*Cmd).Start(c uintptr) error'"));
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto calls = callObjects(r.out);
    CHECK(calls.size() >= kCommands);
    for (auto& o : calls) {
      CHECK(o["args"].as_object().at("c").to_number<uint64_t>() != 0);  // a *exec.Cmd
      REQUIRE(o["results"].as_array().size() == 1);
      CHECK(o["results"].as_array()[0].is_null());  // every process started: a nil error
    }
    auto ids = checkedGoids(calls);
    CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() >= kCommands);
    // latency sees every start end.
    auto lat = run(hookCommand(repo, "latency --json -c '" + path + " run stress' 'os/exec.(*Cmd).Start'"));
    REQUIRE_MESSAGE(lat.exitCode == 0, lat.err);
    auto l = forFunc(lat.out, "os/exec.(*Cmd).Start");
    REQUIRE(l.contains("count"));
    CHECK(l["count"].to_number<uint64_t>() >= kCommands);
    CHECK(l["mismatches"].to_number<uint64_t>() == 0);
    MESSAGE(s.file << " (" << s.goVersion << "): " << calls.size() << " calls on "
                   << std::set<int64_t>(ids.begin(), ids.end()).size() << " goroutines " << *ids.begin() << ".."
                   << *ids.rbegin());
  }
  if (tested == 0) MESSAGE("no lefthook sample in " << dir << ": skipped");
}

// Every stack the kernel recorded at an allocation ends in the probed
// function: a stack it could not record is counted on stderr, never shown as
// its caller alone (docs/kernel.md, "Stacks"). Go 1.16 is refused for trace.
TEST_CASE("go samples: folded stacks of runtime.mallocgc all end in it, Go 1.17 to 1.27") {
  std::string dir = samplesDir();
  if (dir.empty()) return;
  TempDir project, repo;
  writeBundleProject(project);
  const bool git = haveGit();
  if (git) writeHookRepo(repo);
  size_t tested = 0;
  for (const auto& s : kSamples) {
    if (s.goVersion.starts_with("go1.16.")) continue;
    const bool esbuild = s.file.starts_with("esbuild-");
    if (!esbuild && !git) continue;
    std::string path = samplePath(dir, s);
    if (path.empty()) continue;
    ++tested;
    CAPTURE(path);
    const std::string out = (project.path / ("folded-" + s.file + ".js")).string();
    auto r = esbuild ? runCli("trace --folded -c '" + bundleCommand(path, project, out) + "' runtime.mallocgc")
                     : run(hookCommand(repo, "trace --folded -c '" + path + " run stress' runtime.mallocgc"));
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    size_t lines = 0, total = 0, strays = 0;
    for (const auto& line : splitLines(r.out)) {
      auto sp = line.rfind(' ');
      REQUIRE(sp != std::string::npos);
      const std::string stack = line.substr(0, sp);
      if (!stack.ends_with(";runtime.mallocgc") && ++strays <= 5) MESSAGE("does not end in runtime.mallocgc: " << line);
      ++lines, total += std::stoull(line.substr(sp + 1));
    }
    CHECK(strays == 0);
    CHECK(lines > 10);   // many distinct allocation sites
    CHECK(total > 100);  // each run allocates ~10,000 times (9,400-17,000 seen)
    MESSAGE(s.file << " (" << s.goVersion << "): " << total << " allocations on " << lines << " stacks");
  }
  if (tested == 0) MESSAGE("no Go sample for Go >= 1.17 in " << dir << ": skipped");
}
