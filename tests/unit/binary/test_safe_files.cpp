// Files goscope writes and reads back (src/util/safe_dir.hpp), the identity
// a target file is pinned by (src/binary/file_identity.hpp) and the escaping
// of outside text in messages (src/util/printable.hpp): the rules as pure
// functions, and SafeDir on a real temporary directory with planted
// symbolic links.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "binary/file_identity.hpp"
#include "util/printable.hpp"
#include "util/safe_dir.hpp"

using namespace goscope;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char t[] = "/tmp/goscope-safe-dir-test-XXXXXX";
    REQUIRE(::mkdtemp(t));
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("safe dir: who may own a directory goscope writes into, and its mode") {
  using T = SafeDir::Trust;
  CHECK(whyNotTrusted(0, S_IFDIR | 0700, 0, T::Private, true).empty());
  CHECK(whyNotTrusted(1000, S_IFDIR | 0700, 1000, T::Private, true).empty());
  CHECK(whyNotTrusted(1000, S_IFDIR | 0700, 0, T::Private, true) ==
        "owned by uid 1000, not by goscope's user (uid 0)");
  CHECK(whyNotTrusted(0, S_IFDIR | 0770, 0, T::Private, true) == "writable by group or others (mode 0770)");
  CHECK(whyNotTrusted(0, S_IFDIR | 01777, 0, T::Private, true) == "writable by group or others (mode 1777)");
  // A file the user names may go into root's /tmp (sticky: nobody else can
  // rename or remove what goscope creates there), not into a shared one.
  CHECK(whyNotTrusted(0, S_IFDIR | 01777, 1000, T::Output, true).empty());
  CHECK(!whyNotTrusted(0, S_IFDIR | 0777, 1000, T::Output, true).empty());
  CHECK(!whyNotTrusted(1001, S_IFDIR | 0755, 1000, T::Output, true).empty());
  CHECK(whyNotTrusted(0, S_IFREG | 0600, 0, T::Private, true) == "not a directory");
  CHECK(whyNotTrusted(0, S_IFIFO | 0600, 0, T::Private, false) == "not a regular file");
}

TEST_CASE("safe dir: a planted symbolic link is replaced, never followed, and a foreign file is not read") {
  TempDir t;
  const fs::path victim = t.path / "victim";
  { std::ofstream(victim) << "precious"; }
  fs::create_directory(t.path / "cache");
  ::chmod((t.path / "cache").c_str(), 0700);
  auto dir = SafeDir::open((t.path / "cache").string(), SafeDir::Trust::Private);
  REQUIRE_MESSAGE(dir, (dir ? "" : dir.error().message));

  // At the file's own name: rename replaces the link itself.
  fs::create_symlink(victim, t.path / "cache/host-costs.json");
  REQUIRE(dir->writeFile("host-costs.json", std::string_view("{}\n")));
  CHECK(slurp(victim) == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(t.path / "cache/host-costs.json")));
  CHECK(slurp(t.path / "cache/host-costs.json") == "{}\n");

  // A link is not read back as one of goscope's files.
  fs::create_symlink(victim, t.path / "cache/other.json");
  auto r = dir->readOwnFile("other.json", 1024);
  REQUIRE(!r);
  CHECK(r.error().message.find("symbolic link") != std::string::npos);

  // A file others may write is not read either.
  { std::ofstream(t.path / "cache/open.json") << "x"; }
  ::chmod((t.path / "cache/open.json").c_str(), 0666);
  auto o = dir->readOwnFile("open.json", 1024);
  REQUIRE(!o);
  CHECK(o.error().message.find("writable by group or others") != std::string::npos);

  // A directory that is itself a link is refused.
  fs::create_directory_symlink(t.path / "cache", t.path / "link");
  auto l = SafeDir::open((t.path / "link").string(), SafeDir::Trust::Private);
  REQUIRE(!l);
  CHECK(l.error().message.find("symbolic link") != std::string::npos);

  // A directory others may write into is refused, with its mode.
  fs::create_directory(t.path / "shared");
  ::chmod((t.path / "shared").c_str(), 0777);
  auto s = SafeDir::open((t.path / "shared").string(), SafeDir::Trust::Private);
  REQUIRE(!s);
  CHECK(s.error().message.find("mode 0777") != std::string::npos);
  CHECK(slurp(victim) == "precious");
}

TEST_CASE("safe dir: an output file must be a regular file or nothing yet") {
  TempDir t;
  ::chmod(t.path.c_str(), 0755);
  CHECK(SafeDir::forOutputFile((t.path / "new.svg").string()));
  { std::ofstream(t.path / "old.svg") << "x"; }
  CHECK(SafeDir::forOutputFile((t.path / "old.svg").string()));
  ::mkfifo((t.path / "fifo").c_str(), 0600);
  auto f = SafeDir::forOutputFile((t.path / "fifo").string());
  REQUIRE(!f);
  CHECK(f.error().message.find("special file") != std::string::npos);
  auto d = SafeDir::forOutputFile(t.path.string());
  CHECK(!d);
  fs::create_symlink("/etc/passwd", t.path / "link.svg");
  auto l = SafeDir::forOutputFile((t.path / "link.svg").string());
  REQUIRE(!l);
  CHECK(l.error().message.find("symbolic link") != std::string::npos);
  CHECK(!SafeDir::forOutputFile("/dev/null"));
  CHECK(!SafeDir::forOutputFile("/nonexistent/dir/x.svg"));
}

TEST_CASE("file identity: what changed between the analysis and the attach, in words") {
  struct stat a{};
  a.st_dev = makedev(8, 1);
  a.st_ino = 11;
  a.st_size = 90;
  a.st_mtim = {100, 5};
  struct stat b = a;
  CHECK(describeChange(FileIdentity::of(a), FileIdentity::of(b)).empty());
  b.st_ino = 12;
  CHECK(describeChange(FileIdentity::of(a), FileIdentity::of(b)) ==
        "another file (inode 12 on device 8:1, was inode 11 on device 8:1)");
  b = a;
  b.st_size = 100;
  CHECK(describeChange(FileIdentity::of(a), FileIdentity::of(b)) == "the same file rewritten (size 100, was 90)");
  b = a;
  b.st_mtim = {101, 0};
  CHECK(describeChange(FileIdentity::of(a), FileIdentity::of(b)) ==
        "the same file rewritten (modified since it was read)");
}

TEST_CASE("printable: control characters in outside text are escaped, UTF-8 stays") {
  CHECK(escapeControl("main.add") == "main.add");
  CHECK(escapeControl("a\nb") == "a\\nb");
  CHECK(escapeControl("\x1b[31mred") == "\\x1b[31mred");
  CHECK(escapeControl(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(escapeControl("del\x7f") == "del\\x7f");
  CHECK(escapeControl("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(escapeControl("csi\xc2\x9b") == "csi\\u009b");
}
