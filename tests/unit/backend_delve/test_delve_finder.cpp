// Which dlv goscope picks for a target (backend/delve/delve_finder.hpp):
// the one named, else the first found on $PATH and then in the toolchain
// cache whose window covers the target's Go release. The dlvs here are
// small scripts that answer `version` as dlv does, in a private $PATH and a
// private cache; the real Delves are run by the release contract
// (tests/release/).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "backend/delve/delve_finder.hpp"

using namespace goscope::delve;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for one scope (unset: nullopt).
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
    if (const char* o = std::getenv(name.c_str())) old = o;
    if (value) ::setenv(name.c_str(), value->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
  ~EnvVar() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("goscope-finder-" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all);
  }
  ~Scratch() { fs::remove_all(dir); }
  // An executable that prints dlv's version lines for `version`.
  std::string dlv(const std::string& where, const std::string& version) {
    fs::create_directories(dir / where);
    for (fs::path p = dir / where; p != dir; p = p.parent_path()) fs::permissions(p, fs::perms::owner_all);
    fs::path p = dir / where / "dlv";
    std::ofstream(p) << "#!/bin/sh\n[ \"$1\" = version ] && printf 'Delve Debugger\\nVersion: " << version
                     << "\\nBuild: x\\n'\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  }
  // A dlv in the cache as scripts/toolchains.sh lays it out: ITEM/usr/bin/dlv, ITEM/.complete.
  std::string cached(const std::string& item, const std::string& version) {
    std::string p = dlv("cache/" + item + "/usr/bin", version);
    std::ofstream(dir / "cache" / item / ".complete") << version << "\n";
    return p;
  }
};

}  // namespace

TEST_CASE("delve finder: the dlv whose window covers the target, $PATH first, then the cache newest first") {
  Scratch s;
  const std::string onPath = s.dlv("bin", "1.20.2");
  const std::string d24 = s.cached("dlv1.24", "1.24.0");
  const std::string d27 = s.cached("dlv1.27", "1.27.1");
  EnvVar path("PATH", (s.dir / "bin").string());
  EnvVar cache("GOSCOPE_TOOLCHAINS", (s.dir / "cache").string());
  EnvVar named("GOSCOPE_DLV", std::nullopt);

  auto found = findDelves();
  REQUIRE(found.size() == 3);
  CHECK(found[0].path == onPath);
  CHECK(found[0].origin == "$PATH");
  CHECK(found[1].path == d27);  // newest first
  CHECK(found[2].path == d24);
  CHECK(found[1].origin == "the toolchain cache");

  auto c19 = chooseDelve("", "go1.19.8");
  REQUIRE(c19.chosen);
  CHECK(c19.chosen->path == onPath);
  CHECK(c19.covers);
  CHECK(c19.why.find("Delve 1.20.2 (" + onPath + ", $PATH) reads Go 1.18 to 1.20, which covers go1.19.8") == 0);

  auto c24 = chooseDelve("", "go1.24.4");
  REQUIRE(c24.chosen);
  CHECK(c24.chosen->path == d24);
  CHECK(c24.covers);
  CHECK(c24.why.find("which covers go1.24.4; not Delve 1.20.2") != std::string::npos);
  CHECK(c24.hint.empty());

  auto c27 = chooseDelve("", "go1.27.3");
  REQUIRE(c27.chosen);
  CHECK(c27.chosen->path == d27);
  CHECK(c27.chosen->window->accepts(25));

  // Nothing covers: the first found is kept (--check-go-version=false tries
  // it), and the hint names the Delve that would.
  auto c21 = chooseDelve("", "go1.21.13");
  REQUIRE(c21.chosen);
  CHECK_FALSE(c21.covers);
  CHECK(c21.chosen->path == onPath);
  CHECK(c21.why.rfind("no Delve found reads go1.21.13: ", 0) == 0);
  CHECK(c21.hint == "Delve 1.21 to 1.23 read Go 1.21 (Debian has none of them): go install "
                    "github.com/go-delve/delve/cmd/dlv@v1.23.0, then --dlv PATH or GOSCOPE_DLV=PATH");

  // An unknown Go release takes the first found.
  auto unknown = chooseDelve("", "");
  REQUIRE(unknown.chosen);
  CHECK(unknown.chosen->path == onPath);
  CHECK(unknown.covers);
}

TEST_CASE("delve finder: --dlv and GOSCOPE_DLV name one, whatever its window") {
  Scratch s;
  const std::string onPath = s.dlv("bin", "1.20.2");
  const std::string other = s.dlv("elsewhere", "1.27.1");
  EnvVar path("PATH", (s.dir / "bin").string());
  EnvVar cache("GOSCOPE_TOOLCHAINS", (s.dir / "cache").string());
  {
    EnvVar named("GOSCOPE_DLV", other);
    auto c = chooseDelve("", "go1.19.8");
    REQUIRE(c.chosen);
    CHECK(c.chosen->path == other);
    CHECK(c.chosen->origin == "GOSCOPE_DLV");
    CHECK_FALSE(c.covers);
    CHECK(c.why.find("which does not cover go1.19.8: named by GOSCOPE_DLV") != std::string::npos);
    CHECK(c.hint == "Delve 1.20 reads Go 1.19: apt-get install delve (Debian 12)");
    // --dlv wins over the variable.
    auto flag = chooseDelve(onPath, "go1.19.8");
    CHECK(flag.chosen->path == onPath);
    CHECK(flag.chosen->origin == "--dlv");
    CHECK(flag.covers);
  }
  EnvVar named("GOSCOPE_DLV", std::nullopt);
  auto missing = chooseDelve((s.dir / "nosuch").string(), "go1.24.4");
  CHECK_FALSE(missing.chosen);
  CHECK(missing.tried == (s.dir / "nosuch").string() + " (--dlv)");
}

TEST_CASE("delve finder: no dlv anywhere, and a cache another user could write to") {
  Scratch s;
  fs::create_directories(s.dir / "bin");
  EnvVar path("PATH", (s.dir / "bin").string());
  EnvVar cache("GOSCOPE_TOOLCHAINS", (s.dir / "cache").string());
  EnvVar named("GOSCOPE_DLV", std::nullopt);
  CHECK_FALSE(anyDelve(""));
  auto none = chooseDelve("", "go1.25.12");
  CHECK_FALSE(none.chosen);
  CHECK(none.tried == "dlv on $PATH or in " + (s.dir / "cache").string());
  CHECK(none.hint.find("scripts/toolchains.sh dlv1.27") != std::string::npos);

  // goscope runs what it finds with its own privileges: a dlv in a cache
  // directory that others may write to is not taken.
  s.cached("dlv1.24", "1.24.0");
  CHECK(anyDelve(""));
  fs::permissions(s.dir / "cache" / "dlv1.24", fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
  CHECK_FALSE(anyDelve(""));
}

TEST_CASE("delve finder: the hint names the Delve for each Go release and how to get it") {
  CHECK(delveFetchHint(18) == "Delve 1.20 reads Go 1.18: apt-get install delve (Debian 12)");
  CHECK(delveFetchHint(22).find("scripts/toolchains.sh dlv1.24") != std::string::npos);
  CHECK(delveFetchHint(24).find("scripts/toolchains.sh dlv1.24") != std::string::npos);
  CHECK(delveFetchHint(25).find("scripts/toolchains.sh dlv1.27") != std::string::npos);
  CHECK(delveFetchHint(27).find("scripts/toolchains.sh dlv1.27") != std::string::npos);
  CHECK(delveFetchHint(28).find("dlv@v1.30.0") != std::string::npos);
  CHECK(delveFetchHint(16).find("Delve 1.16 to 1.18 read Go 1.16") == 0);
}
