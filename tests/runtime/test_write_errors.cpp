// A write error on stdout ends goscope with exit 1 and the reason on stderr
// (docs/errors.md), in every subcommand: to /dev/full (ENOSPC at the first
// write) and to a file on a small tmpfs that fills part of the way through
// (the output up to the full disk is there, the rest said lost). Before,
// every subcommand exited 0: nothing printed to /dev/full, `count` kept the
// first 4 KB of its table and `list` the first 64 KB. A reader that went
// away (EPIPE: `| head`) stays exit 0 by design. The target lives on.
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;

namespace {

const std::string kNoSpace = "cannot write the output to stdout: No space left on device";

// A tmpfs of `size` mounted for the test's life (unmounted, lazily if busy, and removed after).
class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& size) {
    char tmpl[] = "/tmp/goscope-full-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    const std::string opts = "size=" + size + ",mode=0700";
    REQUIRE_MESSAGE(::mount("goscope-test-full", dir_.c_str(), "tmpfs", 0, opts.c_str()) == 0, std::strerror(errno));
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_ && ::umount(dir_.c_str()) != 0) ::umount2(dir_.c_str(), MNT_DETACH);
    ::rmdir(dir_.c_str());
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

}  // namespace

TEST_CASE("write errors: every subcommand writing to /dev/full exits 1 with the reason") {
  Child counter({fixture("counter")});
  const std::string pid = std::to_string(counter.pid()), bin = fixture("counter");
  const std::vector<std::string> commands = {
      "list -b " + bin,
      "list --json -b " + bin,
      "info -b " + bin,
      "info --json -p " + pid,
      "count -p " + pid + " main.doWork -d 0.5",
      "count --json -p " + pid + " main.doWork -i 0.2 -d 0.5",
      "latency -p " + pid + " main.doWork -d 0.5",
      "trace --strategy bpf -p " + pid + " main.doWork -d 0.5",
      "trace --json --strategy bpf -p " + pid + " main.doWork -d 0.5",
      "trace --folded -p " + pid + " main.doWork -d 0.5",
      "break --strategy bpf -p " + pid + " main.doWork -n 1",
      "read -p " + pid + " main.counter",
      "doctor -p " + pid,
      "count --help",
      "--version",
  };
  for (const auto& c : commands) {
    CAPTURE(c);
    auto r = runCli(c + " >/dev/full");
    CHECK_MESSAGE(r.exitCode == 1, r.err);
    CHECK_MESSAGE(r.err.find(kNoSpace) != std::string::npos, r.err);
  }
  CHECK(counter.alive());
}

TEST_CASE("write errors: stdout closed (>&-) is an error, said, exit 1") {
  Child counter({fixture("counter")});
  for (const std::string& c : {"list -b " + fixture("counter"), "count -p " + std::to_string(counter.pid()) + " main.doWork -d 0.5"}) {
    CAPTURE(c);
    auto r = runCli(c + " >&-");
    CHECK_MESSAGE(r.exitCode == 1, r.err);
    CHECK_MESSAGE(r.err.find("cannot write the output to stdout: Bad file descriptor") != std::string::npos, r.err);
  }
  CHECK(counter.alive());
}

// Started with stdout and stderr closed, goscope puts /dev/null on them
// before it opens anything (src/main.cpp), so dlv's socket or a pipe to the
// guardian never takes fd 1 or 2 and the Delve session runs as any other;
// the closed stdout is still the error it is (exit 1).
TEST_CASE("write errors: stdout and stderr both closed (>&- 2>&-) in a Delve session: exit 1, the target left running and intact") {
  Counter c;
  const double before = c.rate();
  const std::string pid = std::to_string(c.pid());
  for (const std::string& cmd : {"read --strategy delve -p " + pid + " main.counter",
                                 "break --strategy delve -n 2 -d 60 -p " + pid + " main.doWork"}) {
    CAPTURE(cmd);
    auto r = runCli(cmd + " >&- 2>&-");
    CHECK(r.exitCode == 1);
    CHECK_MESSAGE(waitUntraced(c.pid(), 20s), "a dlv is still attached to the fixture");
  }
  checkUnharmed(c, before);
}

TEST_CASE("write errors: a full disk ends list and count with exit 1, what fitted is there") {
  Child counter({fixture("counter")});
  SmallTmpfs disk("16k");
  // list: thousands of functions, far beyond 16 KB.
  const std::string listOut = disk.path("list.txt");
  auto r = runCli("list -b " + fixture("counter") + " > " + listOut);
  CHECK_MESSAGE(r.exitCode == 1, r.err);
  CHECK_MESSAGE(r.err.find(kNoSpace) != std::string::npos, r.err);
  const auto listed = splitLines(slurpFile(listOut));
  CHECK(listed.size() > 10);  // what fitted before the disk was full
  std::filesystem::remove(listOut);

  // count: the runtime's functions a running counter calls: a table longer than a 4 KB disk.
  SmallTmpfs small("4k");
  const std::string countOut = small.path("count.txt");
  r = runCli("count -p " + std::to_string(counter.pid()) + " 'runtime.*' 'main.*' -d 1 > " + countOut);
  const auto size = std::filesystem::file_size(countOut);
  INFO("count wrote " << size << " bytes");
  CHECK_MESSAGE(r.exitCode == 1, r.err);
  CHECK_MESSAGE(r.err.find(kNoSpace) != std::string::npos, r.err);
  CHECK(r.err.find("bytes not written") != std::string::npos);
  CHECK(counter.alive());
}

TEST_CASE("write errors: a reader that goes away (| head) is not an error") {
  auto r = run("bash -c 'set -o pipefail; " + cliPath() + " list -b " + fixture("counter") + " | head -1'");
  CHECK_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find("cannot write") == std::string::npos);
  CHECK(splitLines(r.out).size() == 1);
}
