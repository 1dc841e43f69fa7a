// The analysis cache (src/binary/analysis_cache.hpp, docs/analysis-cache.md)
// on real fixtures: a second run reads what the first searched, and counts
// the same exact numbers the fixture printed itself; a damaged file, one
// another user could write, or GOSCOPE_ANALYSIS_CACHE=0 means a search again,
// never a wrong probe.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
namespace fs = std::filesystem;

namespace {

struct TempCache {
  fs::path dir;
  TempCache() {
    char tmpl[] = "/tmp/goscope-cache-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    dir = tmpl;
    // The host's calibrated probe costs, when there are some: spares each
    // test a calibration (they are what the tests compare, not the subject).
    if (const char* home = std::getenv("HOME")) {
      const fs::path costs = fs::path(home) / ".cache/goscope/host-costs.json";
      std::error_code ec;
      fs::create_directories(dir / "goscope", ec);
      fs::copy_file(costs, dir / "goscope/host-costs.json", ec);
    }
  }
  ~TempCache() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> v;
    if (fs::exists(dir / "goscope/analysis"))
      for (const auto& e : fs::directory_iterator(dir / "goscope/analysis")) v.push_back(e.path());
    return v;
  }
};

CommandResult countWith(const TempCache& c, const std::string& args, const std::string& env = "") {
  return run(env + " XDG_CACHE_HOME=" + c.dir.string() + " " + cliPath() + " count -v --json " + args);
}

// "leaf: N" as the leafcalls fixture printed it.
int64_t ownCount(const std::string& text, const std::string& name) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(text, m, std::regex("(^|\n)" + name + ": (\\d+)\n")), text);
  return std::stoll(m[2]);
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("analysis cache: the second count of a leaf reads its call sites from the cache and counts exactly") {
  TempCache cache;
  const std::string args = "-c '" + fixture("leafcalls") + " --rounds 2' main.leaf main.taken";
  for (int run = 0; run < 2; run++) {
    CAPTURE(run);
    auto r = countWith(cache, args);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto c = finalCounts(r.out);
    CHECK(c["main.leaf"] == ownCount(r.err, "leaf"));
    CHECK(c["main.taken"] == ownCount(r.err, "taken"));
    CHECK(ownCount(r.err, "leaf") == 2 * 1301);
    // The same placement both times: leaf at its 3 call sites, taken at its entry.
    CHECK(has(r.err, "main.leaf: no stack check (its entry would be single-stepped): probed at its 3 call site(s)"));
    CHECK(has(r.err, "main.taken: no stack check: the first instruction is single-stepped; its call sites are not used"));
    if (run == 0) {
      CHECK(has(r.err, "searched the binary for the call sites of"));
      CHECK(has(r.err, "analysis cache: "));
      CHECK(cache.files().size() == 1);
    } else {
      CHECK(has(r.err, "from the analysis cache"));
      CHECK(!has(r.err, "searched the binary for the call sites of"));
    }
  }
  // A file only this user may write: 0600 in a 0700 directory.
  REQUIRE(cache.files().size() == 1);
  struct stat st{};
  REQUIRE(::stat(cache.files()[0].c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((cache.dir / "goscope/analysis").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("analysis cache: inlined bodies from the cache count what the fixture counted, in every variant") {
  TempCache cache;
  for (const auto& v : kVariants) {
    CAPTURE(v);
    const std::string args = "-c '" + fixture("inlined", v) + " --repeat 2' main.square main.isEven main.addOne main.sumTo";
    std::map<std::string, int64_t> first;
    for (int run = 0; run < 2; run++) {
      CAPTURE(run);
      auto r = countWith(cache, args);
      REQUIRE_MESSAGE(r.exitCode == 0, r.err);
      auto got = finalCounts(r.out);
      // The fixture's last "square=N isEven=N ..." line.
      std::string last;
      for (const auto& line : splitLines(r.err))
        if (line.starts_with("square=")) last = line;
      static const std::regex kv(R"((\w+)=(\d+))");
      int checked = 0;
      for (auto it = std::sregex_iterator(last.begin(), last.end(), kv); it != std::sregex_iterator(); ++it, ++checked)
        CHECK(got["main." + (*it)[1].str()] == std::stoll((*it)[2].str()));
      CHECK(checked == 4);
      if (run == 0) first = got;
      else CHECK(got == first);
      if (v != "nopt") CHECK(has(r.err, run == 0 ? "analysis cache: " : "inlined bodies from the analysis cache"));
    }
  }
}

TEST_CASE("analysis cache: a damaged file, a file others may write, or GOSCOPE_ANALYSIS_CACHE=0 means a new search") {
  TempCache cache;
  const std::string args = "-c '" + fixture("leafcalls") + " --rounds 1' main.leaf";
  auto r = countWith(cache, args);
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  REQUIRE(cache.files().size() == 1);
  const fs::path file = cache.files()[0];
  auto searchedAgainAndExact = [&](const CommandResult& r) {
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(has(r.err, "searched the binary for the call sites of"));
    CHECK(finalCounts(r.out)["main.leaf"] == ownCount(r.err, "leaf"));
  };
  SUBCASE("a flipped byte") {
    {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-3, std::ios::end);
      char b = 0;
      f.read(&b, 1);
      f.seekp(-3, std::ios::end);
      b = static_cast<char>(b ^ 0x5a);
      f.write(&b, 1);
    }
    auto again = countWith(cache, args);
    CHECK(has(again.err, "ignored: its checksum does not match (damaged)"));
    searchedAgainAndExact(again);
    // ... and the file is written anew: the next run reads it.
    auto third = countWith(cache, args);
    CHECK(has(third.err, "from the analysis cache"));
  }
  SUBCASE("a file others may write") {
    fs::permissions(file, fs::perms::others_write, fs::perm_options::add);
    auto again = countWith(cache, args);
    CHECK(has(again.err, "not a private regular file of this user"));
    searchedAgainAndExact(again);
  }
  SUBCASE("GOSCOPE_ANALYSIS_CACHE=0") {
    auto again = countWith(cache, args, "GOSCOPE_ANALYSIS_CACHE=0");
    CHECK(!has(again.err, "analysis cache"));
    searchedAgainAndExact(again);
  }
}
