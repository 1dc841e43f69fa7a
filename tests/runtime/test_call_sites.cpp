// Call-site placement (issue #15, src/binary/call_sites.hpp) on the leafcalls
// fixture, every build variant: main.leaf (a leaf without a stack check,
// called from three `call` sites only) is counted at its call sites, and the
// count equals the calls the fixture made and printed itself; main.taken
// (also a leaf, but its address is stored in its funcval and loaded for
// apply) keeps its entry probe, and list says why. Latency and trace pair
// each call site with the instruction after it: latency counts every call
// with no mismatch, trace prints what trace --entry prints (main.wide: an
// argument passed on the stack, two results).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <regex>

#include <unistd.h>

#include <chrono>

#include "backend/bpf/bpf_engine.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "binary/call_sites.hpp"
#include "binary/go_binary.hpp"

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

TEST_CASE("call sites: latency pairs each call site with the instruction after it, counts exact, no mismatch, every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("latency -v --json -c '" + fixture("leafcalls", v) + " --rounds 2' main.leaf main.wide");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    // -v says where each went: the calls and the instruction after each.
    CHECK(r.err.find("main.leaf: no stack check (its entry would be single-stepped): probed at its 3 call site(s)") !=
          std::string::npos);
    CHECK(r.err.find("main.wide: no stack check (its entry would be single-stepped): probed at its 2 call site(s)") !=
          std::string::npos);
    CHECK(r.err.find("each call ends at the instruction after it") != std::string::npos);
    std::map<std::string, boost::json::object> finals;
    for (auto& o : jsonObjects(r.out))
      if (o.contains("final") && o.contains("func")) finals[std::string(o["func"].as_string())] = o;
    REQUIRE(finals.count("main.leaf"));
    REQUIRE(finals.count("main.wide"));
    INFO(boost::json::serialize(finals["main.leaf"]));
    INFO(boost::json::serialize(finals["main.wide"]));
    // Every call started at a call site ended at the instruction after it:
    // as many latencies as calls the fixture made, none unpaired.
    CHECK(finals["main.leaf"]["count"].as_int64() == ownCount(r.err, "leaf"));
    CHECK(finals["main.wide"]["count"].as_int64() == ownCount(r.err, "wide"));
    CHECK(finals["main.leaf"]["mismatches"].as_int64() == 0);
    CHECK(finals["main.wide"]["mismatches"].as_int64() == 0);
    CHECK(finals["main.leaf"]["min_ns"].as_int64() > 0);
  }
}

TEST_CASE("call sites: latency keeps the entry where the instruction after the call is reached without it, and says why") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    // count: main.bump at its one call site (in main.maybe, under an `if`).
    auto c = runCli("count -v --json -c '" + fixture("leafcalls", v) + " --rounds 2' main.bump");
    REQUIRE_MESSAGE(c.exitCode == 0, c.err);
    CHECK(c.err.find("main.bump: no stack check (its entry would be single-stepped): probed at its 1 call site(s)") !=
          std::string::npos);
    CHECK(finalCounts(c.out)["main.bump"] == ownCount(c.err, "bump"));
    auto r = runCli("latency -v --json -c '" + fixture("leafcalls", v) + " --rounds 2' main.bump");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    // Optimized, the `je` that skips the call lands on the instruction after
    // it: that cannot end a call. (Unoptimized, the call is followed by its
    // own `jmp`, and the sites are used.)
    if (v != "nopt") {
      CHECK(r.err.find("main.bump: no stack check: the first instruction is single-stepped; its call sites are not used: "
                       "the instruction after the call at main.maybe+0x16 is the target of a jump at main.maybe+0x14") !=
            std::string::npos);
    }
    int64_t calls = -1, mismatches = -1;
    for (auto& o : jsonObjects(r.out))
      if (o.contains("final") && o["func"] == "main.bump") {
        calls = o["count"].as_int64();
        mismatches = o["mismatches"].as_int64();
      }
    CHECK(calls == ownCount(r.err, "bump"));
    CHECK(calls == 10);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("call sites: latency --entry keeps the entry and its RETs, with the same count") {
  auto r = runCli("latency -v --entry --json -c '" + fixture("leafcalls") + " --rounds 2' main.leaf");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find("probed at its 3 call site(s)") == std::string::npos);
  int64_t calls = -1, mismatches = -1;
  for (auto& o : jsonObjects(r.out))
    if (o.contains("final") && o["func"] == "main.leaf") {
      calls = o["count"].as_int64();
      mismatches = o["mismatches"].as_int64();
    }
  CHECK(calls == ownCount(r.err, "leaf"));
  CHECK(mismatches == 0);
}

namespace {

// A trace's calls with what differs between two runs (times, durations,
// pids) removed, as sorted JSON lines: the multiset of (function, goroutine,
// arguments, results).
std::vector<std::string> traceCalls(const std::string& out) {
  std::vector<std::string> v;
  for (auto o : callObjects(out)) {
    for (const char* k : {"ts_ns", "time", "duration_ns", "pid"}) o.erase(k);
    v.push_back(boost::json::serialize(o));
  }
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("call sites: trace at call sites prints what trace --entry prints (arguments on the stack, results), every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    // Stripped: the signatures give the layout DWARF would.
    const std::string specs = v == "stripped" ? " 'main.leaf(x int64)' 'main.wide(a [3]int64, k int64) (sum int64, prod int64)'"
                                              : " main.leaf main.wide";
    const std::string cmd = " --json --strategy bpf -c '" + fixture("leafcalls", v) + " --rounds 1'" + specs;
    auto sites = runCli("trace -v" + cmd);
    REQUIRE_MESSAGE(sites.exitCode == 0, sites.err);
    auto entry = runCli("trace -v --entry" + cmd);
    REQUIRE_MESSAGE(entry.exitCode == 0, entry.err);
    // Really at the call sites, and really at the entry.
    CHECK(sites.err.find("main.wide: no stack check (its entry would be single-stepped): probed at its 2 call site(s)") !=
          std::string::npos);
    CHECK(entry.err.find("probed at its 2 call site(s)") == std::string::npos);
    const auto a = traceCalls(sites.out), b = traceCalls(entry.out);
    CHECK(a.size() == 1301 + 2);
    CHECK(a == b);
    // main.wide's stack-passed array and its two results, as the fixture computes them.
    int wides = 0;
    for (auto& o : callObjects(sites.out)) {
      if (o["func"] != "main.wide") continue;
      INFO(boost::json::serialize(o));
      wides++;
      CHECK(o["goid"].as_int64() == 1);
      auto& args = o["args"].as_object();
      auto& arr = args.at("a").as_array();
      REQUIRE(arr.size() == 3);
      const int64_t k = args.at("k").as_int64();
      const int64_t sum = arr[0].as_int64() + arr[1].as_int64() + arr[2].as_int64() + k;
      REQUIRE(o["results"].as_array().size() == 2);
      CHECK(o["results"].as_array()[0].as_int64() == sum);
      CHECK(o["results"].as_array()[1].as_int64() == arr[1].as_int64() * k);
      CHECK((k == 5 || k == 9));
    }
    CHECK(wides == 2);
  }
}

// Below the CLI: the engine itself, in both attach modes (the perf-event
// fallback takes the probed address from pt_regs, uprobe_multi from
// bpf_get_func_ip): every call of main.leaf starts at one of its three
// `call`s and ends at the instruction after it, the events carry the call's
// return address and the entry's frame, and the latency pairs every call.
TEST_CASE("call sites: the engine pairs each call site with the instruction after it (uprobe_multi and perf-event uprobes)") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root");
    return;
  }
  const std::string path = fixture("leafcalls");
  auto bin = goscope::GoBinary::open(path);
  REQUIRE(bin);
  const goscope::GoFunction* fn = (*bin)->pclntab().functionNamed("main.leaf");
  REQUIRE(fn);
  const uint64_t entry = fn->entry;
  const auto index = goscope::CallSiteIndex::build(**bin, std::span<const uint64_t>(&entry, 1));
  const goscope::CallSiteProof* proof = index.find(entry);
  REQUIRE(proof);
  REQUIRE_FALSE(proof->refused);
  REQUIRE(proof->sites.size() == 3);
  REQUIRE_FALSE(goscope::callReturnRefusal(**bin, proof->sites));
  std::vector<goscope::bpf::AttachPoint> points;
  for (uint64_t c : proof->sites) {
    points.push_back({*(*bin)->fileOffset(c), 0, goscope::bpf::SiteKind::Call});
    points.push_back({*(*bin)->fileOffset(c + 5), 0, goscope::bpf::SiteKind::CallReturn});
  }
  for (auto mode : {goscope::bpf::AttachMode::UprobeMulti, goscope::bpf::AttachMode::PerfEvent}) {
    CAPTURE(static_cast<int>(mode));
    auto eng = goscope::bpf::Engine::load({.attachMode = mode});
    REQUIRE_MESSAGE(eng, (eng ? "" : eng.error().message));
    REQUIRE((*eng)->configureProbe(0, {.count = true, .latency = true, .eventAtEntry = true, .eventAtReturn = true}));
    Child c({path, "--rounds", "1", "--sleep-ms", "700"}, true);
    auto st = (*eng)->attach(path, c.pid(), points);
    REQUIRE_MESSAGE(st, (st ? "" : st.error().message));
    std::vector<goscope::bpf::Event> starts, ends;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      auto n = (*eng)->poll(100, [&](const goscope::bpf::Event& e) {
        goscope::bpf::Event copy = e;
        copy.blocks.clear();  // spans into the ring: not kept
        (e.isReturn() ? ends : starts).push_back(copy);
      });
      REQUIRE(n);
      if (*n == 0 && !c.alive()) break;
    }
    std::string out, l;
    while (c.readLine(l, 500)) out += l + "\n";
    CHECK(ownCount(out, "leaf") == 1301);
    CHECK(*(*eng)->count(0) == 1301);
    auto lat = (*eng)->latency(0);
    REQUIRE(lat);
    CHECK(lat->count == 1301);
    CHECK(lat->mismatches == 0);
    REQUIRE(starts.size() == 1301);
    REQUIRE(ends.size() == 1301);
    // Non-PIE: the probed addresses are the link-time ones.
    for (const auto& e : starts) {
      CHECK(std::find(proof->sites.begin(), proof->sites.end(), e.ip) != proof->sites.end());
      CHECK(e.site == goscope::bpf::SiteKind::Call);
      CHECK(e.retAddr == e.ip + 5);
      CHECK(e.goid == 1);
    }
    for (size_t i = 0; i < ends.size(); i++) {
      CHECK(ends[i].site == goscope::bpf::SiteKind::CallReturn);
      CHECK(ends[i].retAddr == ends[i].ip);
      CHECK(ends[i].ip == starts[i].ip + 5);        // one goroutine: start, end, start, end...
      CHECK(ends[i].frame == starts[i].frame);      // the entry's frame at both
      CHECK(ends[i].sp == starts[i].sp);            // the entry's RSP at both
      CHECK(ends[i].durationNs > 0);
    }
  }
}
