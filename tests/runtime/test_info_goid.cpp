// goscope info shows the goroutine id offset the probes use, also when it
// is assumed (was: "goid_offset": null while traces printed goroutine ids
// read at the assumed offset).
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <unistd.h>

#include "support/run.hpp"

using namespace goscope::test;

TEST_CASE("info: the goroutine id offset the probes use, found or assumed") {
  // A stripped binary whose runtime.newproc1 goscope cannot find (its name
  // in pclntab changed, same length): nothing says where goid is.
  const std::string copy = "/tmp/goscope-goid-" + std::to_string(::getpid());
  std::filesystem::copy_file(fixture("functions", "stripped"), copy, std::filesystem::copy_options::overwrite_existing);
  auto renamed = run("python3 -c 'import sys; p=sys.argv[1]; b=open(p,\"rb\").read(); n=b.count(b\"runtime.newproc1\\x00\"); "
                     "open(p,\"wb\").write(b.replace(b\"runtime.newproc1\\x00\", b\"runtime.newprocX\\x00\")); print(n)' " + copy);
  REQUIRE(renamed.exitCode == 0);
  REQUIRE(renamed.out == "1\n");
  auto j = runCli("info --json -b " + copy);
  REQUIRE_MESSAGE(j.exitCode == 0, j.err);
  auto o = boost::json::parse(j.out).as_object();
  CHECK(o["goid_offset"].to_number<int64_t>() == 152);  // was: null
  CHECK(o["goid_offset_assumed"].as_bool());
  CHECK(std::string(o["goid_offset_source"].as_string()).starts_with("assumed: Go's usual offset; not found in the binary: no runtime.newproc1"));
  auto t = runCli("info -b " + copy);
  CHECK(t.out.find("runtime.g.goid: offset 152 (assumed: ") != std::string::npos);
  CHECK(t.out.find("goroutine ids may be wrong") != std::string::npos);
  // ... and 152 is what the probes read at: main runs on goroutine 1 (Go 1.19 keeps goid at 152).
  auto tr = runCli("trace --json -c " + copy + " 'main.add(x int, y int) int'");
  REQUIRE_MESSAGE(tr.exitCode == 0, tr.err);
  CHECK(tr.out.find("\"goid\":1,") != std::string::npos);
  // Found: not assumed.
  auto found = runCli("info --json -b " + fixture("functions", "stripped"));
  REQUIRE(found.exitCode == 0);
  auto f = boost::json::parse(found.out).as_object();
  CHECK_FALSE(f["goid_offset_assumed"].as_bool());
  CHECK(std::string(f["goid_offset_source"].as_string()).starts_with("runtime.newproc1's store at 0x"));
  std::filesystem::remove(copy);
}
