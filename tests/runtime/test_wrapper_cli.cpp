// -c through a wrapper (issue #17): a shell script that execs the Go
// program, `sh -c` that forks it (after a program that is not Go), and a
// wrapper that runs no Go program at all. goscope follows the command with
// ptrace to the first Go program it execs (util/exec_follow.hpp), probes it
// from its first instruction, and exits with the wrapper's status.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;

namespace {

uint64_t finalCount(const std::string& out, const std::string& func) {
  for (const auto& o : jsonObjects(out))
    if (o.contains("final") && o.contains("func") && o.at("func").as_string() == func)
      return o.at("count").to_number<uint64_t>();
  return 0;
}

// A script beside nothing else: `#!/bin/sh` + body, executable.
std::string writeScript(const std::string& name, const std::string& body) {
  const std::string path = "/tmp/goscope-wrapper-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  return path;
}

}  // namespace

TEST_CASE("wrapper: -c of a script that execs the Go program counts it from its first call") {
  const std::string script = writeScript("exec.sh", "echo wrapper >&2\nexec " + fixture("functions") + " \"$@\"");
  auto r = runCli("count --json -c '" + script + " --repeat 3' main.add");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(finalCount(r.out, "main.add") == 3);
  CHECK(r.err.find("run by " + script) != std::string::npos);
  ::unlink(script.c_str());
}

TEST_CASE("wrapper: sh -c that forks a program that is not Go, then the Go program, gives goscope its status") {
  auto r = runCli("count --json -c 'sh -c \"/bin/true; " + fixture("functions") + " --repeat 2; exit 7\"' main.add");
  CHECK_MESSAGE(r.exitCode == 7, r.err);
  CHECK(finalCount(r.out, "main.add") == 2);
  CHECK(r.err.find("exited with status 7") != std::string::npos);
}

TEST_CASE("wrapper: latency and trace through a wrapper") {
  const std::string script = writeScript("run.sh", fixture("functions") + " \"$@\"");  // forks, does not exec
  auto lat = runCli("latency --json -c '" + script + " --repeat 4' main.add");
  REQUIRE_MESSAGE(lat.exitCode == 0, lat.err);
  CHECK(finalCount(lat.out, "main.add") == 4);
  auto tr = runCli("trace --json -c '" + script + " --repeat 2' main.add");
  REQUIRE_MESSAGE(tr.exitCode == 0, tr.err);
  const auto calls = callObjects(tr.out);
  REQUIRE(calls.size() == 2);
  for (const auto& c : calls) CHECK(c.at("func").as_string() == "main.add");
  ::unlink(script.c_str());
}

TEST_CASE("wrapper: a command that runs no Go program is one line and exit 4") {
  auto r = runCli("count -c 'sh -c \"exit 4\"' main.add");
  CHECK(r.exitCode == 4);
  CHECK(r.err.find("is not a Go program, and following it: the command exited (status 4) without running a Go program") !=
        std::string::npos);
  CHECK(splitLines(r.err).size() == 1);
}
