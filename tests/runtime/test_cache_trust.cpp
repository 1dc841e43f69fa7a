// The files goscope keeps between runs, against someone who can write them
// (docs/security.md, docs/analysis-cache.md):
//   - an analysis record edited with its checksum recomputed: every probe
//     address in it is proved again on the binary, and one that fails sends
//     the run back to a search (root); a setcap copy run by uid 65534 does
//     not read that user's record at all, and root's process running the
//     same file is never probed where the record says (20 rounds);
//   - a cache directory another user owns, with symbolic links planted in
//     it: goscope writes nothing there nor through them, and says where its
//     figures went instead; without a usable $HOME the figures are cached in
//     a per-user temporary directory, not measured again every run.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"
#include "support/unprivileged.hpp"
#include "binary/analysis_record.hpp"
#include "binary/go_binary.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// This file's scratch folders: /tmp/goscope-trust-TAG-PID.
struct Dir : ScratchDir {
  explicit Dir(const std::string& tag) : ScratchDir("trust-" + tag) {}
};

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::vector<fs::path> recordsIn(const fs::path& dir) {
  std::vector<fs::path> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".bin") v.push_back(e.path());
  return v;
}

// Moves every inlined body's probe of the record at `file` (made for
// `binary`) `delta` bytes on, inside its caller, and writes the record back
// with its checksum recomputed: what someone who can write the file can do.
// Returns where the moved probes now point.
std::vector<uint64_t> tamperInlinedProbes(const fs::path& file, const std::string& binary, uint64_t delta) {
  const std::string bytes = slurpFile(file.string());
  REQUIRE(bytes.size() > kAnalysisHeaderSize);
  std::array<uint8_t, 16> key{};
  std::memcpy(key.data(), bytes.data() + 12, 16);
  auto bin = GoBinary::open(binary);
  REQUIRE(bin);
  const GoBinary& b = **bin;
  AnalysisChecks checks{[&b](uint64_t a) { return b.pclntab().functionAt(a); },
                        [&b](uint64_t a, size_t n) { return b.elf().readVaddr(a, n); }};
  std::string why;
  auto rec = parseAnalysis({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, key, checks, &why);
  REQUIRE_MESSAGE(rec, why);
  std::vector<uint64_t> moved;
  for (auto& s : rec->inlined)
    for (auto& p : s.probes)
      if (p + delta < s.caller->end) {
        p += delta;
        moved.push_back(p);
      }
  const std::string out = serializeAnalysis(*rec, key);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << out;
  return moved;
}

}  // namespace

TEST_CASE("cache trust: a record edited with a valid checksum fails its proof, and the probes come from a new search") {
  Dir d("proof");
  const std::string cache = d.path + "/cache";
  fs::create_directories(cache);
  ::chmod(cache.c_str(), 0700);
  const std::string inl = fixture("inlined");
  const std::string args = "count -v --json -c '" + inl + " --repeat 2' main.square main.isEven main.addOne main.sumTo";
  const std::string env = "GOSCOPE_NO_CALIBRATION=1 XDG_CACHE_HOME=" + cache + " ";
  auto first = run(env + cliPath() + " " + args);
  REQUIRE_MESSAGE(first.exitCode == 0, first.err);
  auto files = recordsIn(cache + "/goscope/analysis");
  REQUIRE(files.size() == 1);
  REQUIRE(!tamperInlinedProbes(files[0], inl, 1).empty());
  auto second = run(env + cliPath() + " " + args);
  INFO("stderr: " << second.err);
  REQUIRE(second.exitCode == 0);
  CHECK(has(second.err, "a cached probe address failed its proof against the binary"));
  CHECK(!has(second.err, "inlined bodies from the analysis cache"));
  CHECK(finalCounts(second.out) == finalCounts(first.out));
  // The search's record replaced it: the next run reads it, proved.
  auto third = run(env + cliPath() + " " + args);
  CHECK(has(third.err, "inlined bodies proved on the binary"));
  CHECK(has(third.err, "inlined bodies from the analysis cache"));
  CHECK(finalCounts(third.out) == finalCounts(first.out));
}

TEST_CASE("cache trust: as uid 65534 with a setcap copy, a tampered record never places a probe in root's process") {
  if (::geteuid() != 0 || run(std::string(kAsNobody) + "true").exitCode != 0) {
    MESSAGE("needs root and a working setpriv (util-linux): skipped");
    return;
  }
  const long rounds = envNumber("GOSCOPE_IDENTITY_ROUNDS", 20);
  Dir d("setcap");
  const std::string goscope = d.path + "/gstrust" + std::to_string(::getpid());
  fs::copy_file(cliPath(), goscope);
  ::chmod(goscope.c_str(), 0755);
  REQUIRE_MESSAGE(setBpfPerfmonCaps(goscope), "setting file capabilities failed");
  // Root's program, which uid 65534 may read and run too; root runs it.
  const std::string program = d.path + "/inlined";
  fs::copy_file(fixture("inlined"), program);
  ::chmod(program.c_str(), 0755);
  auto elf = ElfFile::open(program);
  REQUIRE(elf);
  // Running its rounds: "ready", then a line per round (100 ms apart, each
  // a few microseconds of CPU: its CPU time is no sign, in CI it stayed
  // under 10 ms for 10 s).
  Child victim({program, "--loop"}, /*captureStdout=*/true);
  std::string line;
  REQUIRE(victim.readLine(line, 10000));
  REQUIRE(line == "ready");
  REQUIRE(victim.readLine(line, 10000));

  // uid 65534's cache, holding a record for that very file (made by a
  // plain goscope, then edited).
  const std::string cache = d.path + "/cache";
  const std::string patterns = "main.square main.isEven main.addOne main.sumTo";
  auto made = run("GOSCOPE_NO_CALIBRATION=1 XDG_CACHE_HOME=" + cache + " " + cliPath() + " count -b " + program + " " +
                  patterns + " -d 0.3");
  REQUIRE_MESSAGE(made.exitCode == 0, made.err);
  auto files = recordsIn(cache + "/goscope/analysis");
  REQUIRE(files.size() == 1);
  // A -b session places its probes in every process running the file,
  // root's too (the filter drops their hits, not the int3): what must never
  // change in root's process is its code at the addresses the record lies about.
  const std::vector<uint64_t> lies = tamperInlinedProbes(files[0], program, 1);
  REQUIRE(!lies.empty());
  std::vector<uint8_t> truth;
  for (uint64_t a : lies) {
    auto b = (*elf)->readVaddr(a, 1);
    REQUIRE(b);
    truth.push_back((*b)[0]);
  }
  auto lieProbed = [&]() -> uint64_t {
    for (size_t i = 0; i < lies.size(); i++) {
      auto m = readMem(victim.pid(), lies[i], 1);
      if (m.size() == 1 && m[0] != truth[i]) return lies[i];
    }
    return 0;
  };
  REQUIRE(run("chown -R 65534:65534 " + cache).exitCode == 0);
  const std::string tampered = slurpFile(files[0].string());

  std::atomic<bool> done{false};
  std::atomic<uint64_t> harmedAt{0};
  std::thread sampler([&] {
    while (!done) {
      if (uint64_t at = lieProbed()) harmedAt = at;
      std::this_thread::sleep_for(10ms);
    }
  });
  int refusedToRead = 0;
  for (long r = 0; r < rounds; r++) {
    auto g = run("env GOSCOPE_NO_CALIBRATION=1 XDG_CACHE_HOME=" + cache + " " + kAsNobody + goscope + " -v count -b " +
                 program + " " + patterns + " -d 0.3");
    INFO("round " << r << ", stderr: " << g.err);
    CHECK(g.exitCode == 0);
    if (has(g.err, "analysis cache: not used (goscope runs with privileges its user lacks: AT_SECURE)")) refusedToRead++;
    CHECK(!has(g.err, "from the analysis cache"));
    REQUIRE(alive(victim.pid()));
    CHECK(textDifference(victim.pid(), **elf) == 0);
  }
  done = true;
  sampler.join();
  CHECK_MESSAGE(harmedAt == 0, "root's process was probed at an address of the tampered record: " << harmedAt);
  CHECK(refusedToRead == rounds);
  CHECK(slurpFile(files[0].string()) == tampered);  // nor written
  CHECK(alive(victim.pid()));
}

TEST_CASE("cache trust: a foreign-owned cache directory with planted symlinks: nothing outside it is touched") {
  if (::geteuid() != 0) {
    MESSAGE("needs root: skipped");
    return;
  }
  Dir d("foreign");
  // Root's XDG_CACHE_HOME/goscope, owned by uid 65534 (as `sudo -E` leaves
  // it), with links to root-only files under every name goscope writes.
  const std::string xdg = d.path + "/xdg", theirs = xdg + "/goscope", tmp = d.path + "/tmp";
  fs::create_directories(theirs);
  fs::create_directories(tmp);
  const std::string victim = d.path + "/root-only", victimDir = d.path + "/root-dir";
  std::ofstream(victim) << "precious\n";
  ::chmod(victim.c_str(), 0600);
  fs::create_directories(victimDir);
  ::chmod(victimDir.c_str(), 0700);
  fs::create_symlink(victim, theirs + "/host-costs.json");
  for (int i = 0; i < 50; i++) fs::create_symlink(victim, theirs + "/host-costs.json." + std::to_string(i));
  fs::create_directory_symlink(victimDir, theirs + "/analysis");
  REQUIRE(run("chown -R -h 65534:65534 " + theirs).exitCode == 0);
  struct stat before{};
  REQUIRE(::stat(victim.c_str(), &before) == 0);
  auto listing = [&] {
    std::string s;
    for (const auto& e : fs::directory_iterator(theirs)) s += e.path().filename().string() + "\n";
    return s;
  };
  const std::string listed = listing();

  const std::string env = "XDG_CACHE_HOME=" + xdg + " TMPDIR=" + tmp + " ";
  auto cal = run(env + cliPath() + " calibrate");
  INFO("calibrate: " << cal.err);
  REQUIRE(cal.exitCode == 0);
  const std::string fallback = tmp + "/goscope-0";
  CHECK(has(cal.err, "probe costs cached in " + fallback + "/host-costs.json"));
  CHECK(has(cal.err, theirs + " is owned by uid 65534, not by goscope's user (uid 0)"));
  auto count = run(env + cliPath() + " -v count -c '" + fixture("leafcalls") + " --rounds 1' main.leaf");
  INFO("count: " << count.err);
  REQUIRE(count.exitCode == 0);
  CHECK(!has(count.err, "measuring what a probe costs"));  // read from where calibrate put them
  CHECK(recordsIn(fallback + "/analysis").size() == 1);

  struct stat after{};
  REQUIRE(::stat(victim.c_str(), &after) == 0);
  CHECK(slurpFile(victim) == "precious\n");
  CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
  CHECK(fs::is_empty(victimDir));
  CHECK(listing() == listed);
  struct stat fb{};
  REQUIRE(::stat(fallback.c_str(), &fb) == 0);
  CHECK((fb.st_mode & 0777) == 0700);
  CHECK(fb.st_uid == 0);
}

TEST_CASE("cache trust: without a usable $HOME the figures are cached in a per-user temporary directory") {
  Dir d("nohome");
  const std::string tmp = d.path + "/tmp";
  fs::create_directories(tmp);
  const std::string env = "env -u XDG_CACHE_HOME HOME=/nonexistent/home TMPDIR=" + tmp + " ";
  auto cal = run(env + cliPath() + " calibrate");
  INFO("calibrate: " << cal.err);
  REQUIRE(cal.exitCode == 0);
  const std::string where = tmp + "/goscope-" + std::to_string(::geteuid()) + "/host-costs.json";
  CHECK(has(cal.err, "probe costs cached in " + where));
  CHECK(has(cal.err, "/nonexistent/home"));
  CHECK(fs::is_regular_file(where));
  auto count = run(env + cliPath() + " count -c '" + fixture("leafcalls") + " --rounds 1' main.leaf");
  INFO("count: " << count.err);
  REQUIRE(count.exitCode == 0);
  CHECK(!has(count.err, "measuring what a probe costs"));
}
