// A process in a "container": its own mount and PID namespaces, its
// executable at a path that exists only inside (a tmpfs mounted over /mnt in
// its namespace, the fixture bind-mounted there from a host directory). No
// container runtime is needed; `unshare --mount --pid --fork` is what one
// does underneath (issue #16 item 1, docs/containers.md). goscope must reach
// it by host PID on both paths, by the file's host path with -b, and explain
// the inside path.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Lines "add(42, 13) = 55" written so far: one per call of main.add.
int64_t callsIn(const std::string& file) {
  std::ifstream in(file);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("add(42, 13) = 55", 0) == 0) n++;
  return n;
}

std::string exeOf(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

struct Container {
  std::string hostDir = "/tmp/goscope-container-" + std::to_string(::getpid());
  std::string inside = "/mnt/goscope-app-" + std::to_string(::getpid());  // only in its mount namespace
  std::string hostFile = hostDir + "/server", insideFile = inside + "/server";
  std::string out = hostDir + "/calls.out";
  std::unique_ptr<Child> shell;
  pid_t pid = -1;  // the server's pid here (the host's view)

  Container() {
    fs::remove_all(hostDir);
    fs::create_directories(hostDir);
    fs::copy_file(fixture("functions"), hostFile);
    fs::permissions(hostFile, fs::perms::owner_all);
    const std::string script = "mount -t tmpfs none /mnt && mkdir " + inside + " && mount --bind " + hostDir + " " +
                               inside + " && exec " + insideFile + " --loop > " + out;
    shell = std::make_unique<Child>(std::vector<std::string>{"/usr/bin/unshare", "--mount", "--pid", "--fork", "--propagation",
                                                             "private", "/bin/sh", "-c", script});
    waitUntil(
        [&] {
          for (const auto& e : fs::directory_iterator("/proc")) {
            const std::string name = e.path().filename();
            if (name.find_first_not_of("0123456789") == std::string::npos && exeOf(std::stoi(name)) == insideFile) {
              pid = std::stoi(name);
              return true;
            }
          }
          return false;
        },
        10s);
  }
  ~Container() {
    if (pid > 0) ::kill(pid, SIGKILL);  // the namespace's init: its death ends the namespace
    shell.reset();
    fs::remove_all(hostDir);
  }
};

}  // namespace

TEST_CASE("containers: a process in its own mount and PID namespaces is counted, timed, traced and read by -p and -b") {
  if (::geteuid() != 0 || run("unshare --mount --pid --fork true").exitCode != 0) {
    MESSAGE("needs root and unshare (util-linux): skipped");
    return;
  }
  Container c;
  REQUIRE_MESSAGE(c.pid > 0, "the containerized fixture did not start");
  REQUIRE(waitUntil([&] { return callsIn(c.out) >= 2; }, 10s));
  CHECK_FALSE(fs::exists(c.insideFile));  // the path exists inside only
  const std::string p = std::to_string(c.pid);

  SUBCASE("info -p says where it is") {
    auto r = runCli("info --json -p " + p);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto o = boost::json::parse(r.out).as_object();
    CHECK(o["exe"].as_string() == c.insideFile);
    auto& ns = o["namespaces"].as_object();
    CHECK(ns["own_mount"].as_bool());
    CHECK(ns["own_pid"].as_bool());
    CHECK(ns["pid_inside"].as_int64() == 1);  // exec'd by the namespace's first process
    CHECK(ns["file_from_here"].as_string() == "/proc/" + p + "/root" + c.insideFile);
    auto t = runCli("info -p " + p);
    CHECK(t.out.find("namespaces:     its own mount namespace, its own PID namespace") != std::string::npos);
  }
  SUBCASE("count -p: the fixture's own count") {
    const int64_t before = callsIn(c.out);
    auto r = runCli("count --json -p " + p + " main.add -d 2");
    const int64_t made = callsIn(c.out) - before;
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    const int64_t counted = finalCounts(r.out)["main.add"];
    CAPTURE(made);
    // 10 calls a second for the 2 s the probe was on, none counted twice
    // (`made` spans goscope's whole run, start-up included).
    CHECK(counted >= 17);
    CHECK(counted <= made);
  }
  SUBCASE("latency -p and trace -p") {
    auto l = runCli("latency --json -p " + p + " main.add -d 1");
    REQUIRE_MESSAGE(l.exitCode == 0, l.err);
    int64_t timed = -1;
    for (auto& o : callObjects(l.out))
      if (o.contains("func") && o["func"].as_string() == "main.add") timed = o["count"].as_int64();
    CHECK(timed >= 5);
    auto t = runCli("trace --json -p " + p + " main.add -d 1");
    REQUIRE_MESSAGE(t.exitCode == 0, t.err);
    auto calls = callObjects(t.out);
    REQUIRE(calls.size() >= 5);
    for (auto& o : calls) {
      CHECK(o["pid"].as_int64() == c.pid);  // the host's pid, not the namespace's 1
      CHECK(o["args"].as_object().at("x").as_int64() == 42);
      CHECK(o["results"].as_array().at(0).as_int64() == 55);
    }
  }
  SUBCASE("the Delve path: break -p") {
    auto b = runCli("break --strategy delve -p " + p + " main.add --args -n 1");
    INFO(b.err);
    REQUIRE(b.exitCode == 0);
    CHECK(b.out.find("main.add(x=42, y=13)") != std::string::npos);
  }
  SUBCASE("-b with the host's path catches it; with the path inside, a message that says what to do") {
    const int64_t before = callsIn(c.out);
    auto r = runCli("count --json -b " + c.hostFile + " main.add -d 2");
    const int64_t made = callsIn(c.out) - before;
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    const int64_t counted = finalCounts(r.out)["main.add"];
    CAPTURE(made);
    CHECK(counted >= 17);
    CHECK(counted <= made);
    auto viaRoot = runCli("count --json -b /proc/" + p + "/root" + c.insideFile + " main.add -d 1");
    CHECK_MESSAGE(viaRoot.exitCode == 0, viaRoot.err);
    auto inside = runCli("count -b " + c.insideFile + " main.add -d 1");
    CHECK(inside.exitCode == 3);
    CHECK(inside.err == "goscope: " + c.insideFile + ": no such file here; PID " + p +
                            " runs it in another mount namespace (a container) (hint: -p " + p +
                            " probes that process, -b /proc/" + p + "/root" + c.insideFile +
                            " every process that runs the same file)\n");
  }
}
