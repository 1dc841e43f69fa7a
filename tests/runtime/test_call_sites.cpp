// Call-site placement (issue #15, src/target/call_sites.hpp) on the leafcalls
// fixture, every build variant: main.leaf (a leaf without a stack check,
// called from three `call` sites only) is counted at its call sites, and the
// count equals the calls the fixture made and printed itself; main.taken
// (also a leaf, but its address is stored in its funcval and loaded for
// apply) keeps its entry probe, and list says why.
#include <doctest/doctest.h>

#include <map>
#include <regex>

#include "support/json_lines.hpp"
#include "support/run.hpp"

using namespace goscope::test;

namespace {

std::map<std::string, boost::json::object> listRows(const std::string& out) {
  std::map<std::string, boost::json::object> m;
  for (auto& o : jsonObjects(out)) m[std::string(o["func"].as_string())] = o;
  return m;
}

// "leaf: N" as the fixture printed it (count -c sends the target's stdout to stderr).
int64_t ownCount(const std::string& text, const std::string& name) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(text, m, std::regex("(^|\n)" + name + ": (\\d+)\n")), text);
  return std::stoll(m[2]);
}

}  // namespace

TEST_CASE("call sites: list --json shows a leaf at its call sites, a leaf whose address is taken at its entry with the reason") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("list --json -b " + fixture("leafcalls", v) + " main.leaf main.taken");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto rows = listRows(r.out);
    REQUIRE(rows.count("main.leaf"));
    REQUIRE(rows.count("main.taken"));
    auto& leaf = rows["main.leaf"];
    auto& taken = rows["main.taken"];
    INFO(boost::json::serialize(leaf));
    INFO(boost::json::serialize(taken));
    // fromA, fromB and main call it: three `call rel32`, nothing else refers to it.
    CHECK(leaf["probe_kind"] == "call-sites");
    CHECK(leaf["call_sites"].as_int64() == 3);
    CHECK(std::string(leaf["probe_reason"].as_string()).find("3 call site(s)") != std::string::npos);
    CHECK(leaf["probe"] != leaf["entry"]);
    // main calls it directly too, but its funcval holds its address.
    CHECK(taken["probe_kind"] == "stepped-entry");
    CHECK(taken["probe"] == taken["entry"]);
    REQUIRE(taken.contains("call_sites_reason"));
    const std::string why(taken["call_sites_reason"].as_string());
    CHECK((why.find("is stored in") != std::string::npos || why.find("relocation stores") != std::string::npos ||
           why.find("RIP-relative") != std::string::npos));
    CHECK(std::string(taken["probe_reason"].as_string()).find("call sites are not used") != std::string::npos);
  }
}

TEST_CASE("call sites: count equals the fixture's own counts in every variant (call sites for one, entry for the other)") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("count -v --json -c '" + fixture("leafcalls", v) + " --rounds 3' main.leaf main.taken");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto c = finalCounts(r.out);
    // 3 rounds of 1000 + 300 + 1 calls of leaf, 1 + 200 of taken.
    CHECK(ownCount(r.err, "leaf") == 3 * 1301);
    CHECK(ownCount(r.err, "taken") == 3 * 201);
    CHECK(c["main.leaf"] == ownCount(r.err, "leaf"));
    CHECK(c["main.taken"] == ownCount(r.err, "taken"));
    // -v says where each went.
    CHECK(r.err.find("main.leaf: no stack check (its entry would be single-stepped): probed at its 3 call site(s)") !=
          std::string::npos);
    CHECK(r.err.find("main.taken: no stack check: the first instruction is single-stepped; its call sites are not used") !=
          std::string::npos);
  }
}

TEST_CASE("call sites: latency keeps the entry of a leaf and says why, its count stays exact") {
  auto r = runCli("latency -v --json -c '" + fixture("leafcalls") + " --rounds 2' main.leaf");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find("main.leaf: entry probe, single-stepped: latency pairs the entry with its RETs") != std::string::npos);
  int64_t calls = -1;
  for (auto& o : jsonObjects(r.out))
    if (o.contains("final") && o["func"] == "main.leaf") calls = o["count"].as_int64();
  CHECK(calls == ownCount(r.err, "leaf"));
}
