// A running fixture seen through -p: the executable, and the load bias of a
// PIE, computed here independently from /proc/PID/maps and the ELF header.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/run.hpp"

using namespace goscope::test;

namespace {

// First PT_LOAD's p_vaddr minus p_offset, from readelf, rounded to the page.
uint64_t firstLoadVaddr(const std::string& path) {
  auto r = run("readelf -lW " + path + " | awk '$1==\"LOAD\"{print $2, $3; exit}'");
  std::istringstream in(r.out);
  std::string off, vaddr;
  in >> off >> vaddr;
  return (std::stoull(vaddr, nullptr, 16) - std::stoull(off, nullptr, 16)) & ~uint64_t{0xfff};
}

uint64_t offsetZeroMapping(pid_t pid, const std::string& exe) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(exe) == std::string::npos) continue;
    std::istringstream in(line);
    std::string range, perms, off;
    in >> range >> perms >> off;
    if (std::stoull(off, nullptr, 16) == 0) return std::stoull(range.substr(0, range.find('-')), nullptr, 16);
  }
  return 0;
}

boost::json::object infoJson(pid_t pid) {
  auto r = runCli("info --json -p " + std::to_string(pid));
  REQUIRE(r.exitCode == 0);
  return boost::json::parse(r.out).as_object();
}

}  // namespace

TEST_CASE("info -p: load bias of a running PIE fixture") {
  std::string exe = fixture("counter", "pie");
  Child c({exe});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(c.alive());
  auto o = infoJson(c.pid());
  uint64_t expected = offsetZeroMapping(c.pid(), exe) - firstLoadVaddr(exe);
  CHECK(expected != 0);
  CHECK(std::stoull(std::string(o["load_bias"].as_string()), nullptr, 16) == expected);
  CHECK(o["pie"].as_bool());
  CHECK(o["exe"].as_string() == exe);
  CHECK(c.alive());
}

TEST_CASE("info -p: non-PIE fixtures have no bias — facts per variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    Child c({fixture("counter", v)});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto o = infoJson(c.pid());
    // `go version BINARY` prints "BINARY: go1.19.8".
    CHECK(run("go version " + fixture("counter", v)).out == fixture("counter", v) + ": " + std::string(o["go_version"].as_string()) + "\n");
    CHECK(o["main_path"].as_string() == "goscope.fixtures/counter");
    CHECK(o["pie"].as_bool() == (v == "pie"));
    CHECK(o["dwarf"].as_bool() == (v != "stripped"));
    CHECK(o["symtab"].as_bool() == (v != "stripped"));
    if (v != "pie") CHECK(o["load_bias"].as_string() == "0x0");
    if (v != "stripped") CHECK(o["goid_offset"].as_int64() == 152);
    CHECK(c.alive());
  }
}

TEST_CASE("list -p on a running process lists what -b lists") {
  Child c({fixture("counter", "pie")});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto viaPid = runCli("list --json -p " + std::to_string(c.pid()) + " 'main.*'");
  auto viaBin = runCli("list --json -b " + fixture("counter", "pie") + " 'main.*'");
  REQUIRE(viaPid.exitCode == 0);
  CHECK(viaPid.out == viaBin.out);
  CHECK(viaPid.out.find("\"func\":\"main.doWork\"") != std::string::npos);
}
