// Arguments and results decoded end to end: layouts from DWARF (or from a
// user signature on the stripped build), capture plans, the BPF engine on the
// real kernel, zoo running one round, and value_format. Every decoded value
// must be what zoo passes (fixtures/go/zoo/main.go, runRound): pointers vary
// from run to run and are compared as 0x….
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>

#include "backend/bpf/bpf_engine.hpp"
#include "backend/bpf/value_decode.hpp"
#include "probe/abi_layout.hpp"
#include "backend/bpf/capture_plan.hpp"
#include "probe/signature_parse.hpp"
#include "probe/type_names.hpp"
#include "support/run.hpp"
#include "binary/go_binary.hpp"
#include "process/process.hpp"

using namespace goscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Traced {
  std::string func;
  std::vector<ValueLayout> layout;
  CapturePlan plan;
};

// "entry: a=1, b=2" / "return: ~r0=3", addresses replaced by 0x….
std::string line(const bpf::Event& e, const Traced& t, const TypeNamer& names) {
  auto vals = e.isReturn() ? decodeResults(e, t.layout, t.plan, names) : decodeArgs(e, t.layout, t.plan, names);
  std::string s = e.isReturn() ? "return:" : "entry:";
  for (size_t i = 0; i < vals.size(); i++) s += (i ? ", " : " ") + vals[i].name + "=" + vals[i].text;
  static const std::regex addr("0x[0-9a-f]+");
  return std::regex_replace(s, addr, "0x…");
}

// Attaches to each function (entry and every RET), runs one round of zoo,
// returns the decoded lines per function, in order.
std::map<std::string, std::vector<std::string>> traceZoo(const std::string& variant, const std::vector<Traced>& traced) {
  std::string path = test::fixture("zoo", variant);
  auto bin = GoBinary::open(path);
  REQUIRE(bin);
  auto eng = bpf::Engine::load({.ringBytes = 16u << 20});  // main.deepRecurse: 20,002 events a round
  REQUIRE_MESSAGE(eng, (eng ? "" : eng.error().message));
  std::vector<bpf::AttachPoint> points;
  for (uint32_t id = 0; id < traced.size(); id++) {
    const GoFunction* fn = (*bin)->pclntab().functionNamed(traced[id].func);
    REQUIRE_MESSAGE(fn, traced[id].func);
    auto code = (*bin)->analyze(*fn);
    REQUIRE(code);
    REQUIRE(code->probe.kind != ProbeSite::Kind::None);
    auto site = code->probe.kind == ProbeSite::Kind::StackCheckBranch ? bpf::SiteKind::EntryStackCheck : bpf::SiteKind::Entry;
    points.push_back({*(*bin)->fileOffset(code->probe.address), id, site});
    for (uint64_t r : code->returns) points.push_back({*(*bin)->fileOffset(r), id, bpf::SiteKind::Return});
    bpf::ProbeConfig cfg;
    cfg.eventAtEntry = cfg.eventAtReturn = true;
    cfg.entryReads = traced[id].plan.entryReads;
    cfg.returnReads = traced[id].plan.returnReads;
    auto r = (*eng)->configureProbe(id, cfg);
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
  }

  test::Child zoo({path, "--rounds", "1", "--sleep-ms", "1000"}, true);
  std::string ready;
  REQUIRE(zoo.readLine(ready, 10000));
  REQUIRE(ready == "ready");
  auto st = (*eng)->attach(path, zoo.pid(), points);
  REQUIRE_MESSAGE(st, (st ? "" : st.error().message));

  TypeNamer names = TypeNamer::forBinary(**bin);
  auto proc = Process::attach(zoo.pid());
  REQUIRE(proc);
  auto bias = proc->loadBias((*bin)->elf());
  REQUIRE(bias);
  names.setLoadBias(*bias);

  std::map<std::string, std::vector<std::string>> out;
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    auto n = (*eng)->poll(100, [&](const bpf::Event& e) {
      if (e.probeId < traced.size()) out[traced[e.probeId].func].push_back(line(e, traced[e.probeId], names));
    });
    REQUIRE(n);
    if (*n == 0 && !zoo.alive()) break;
  }
  CHECK((*eng)->lostEvents() == 0);
  if (std::getenv("GOSCOPE_TEST_VERBOSE"))
    for (const auto& [f, ls] : out)
      for (const auto& l : ls) MESSAGE(variant << " " << f << " " << l);
  // zoo checks every result itself: its last line must be "zoo: ok ...".
  std::string status, l;
  while (zoo.readLine(l, 500)) status = l;
  CHECK(status.rfind("zoo: ok", 0) == 0);
  return out;
}

Traced fromDwarf(const GoBinary& bin, const std::string& func) {
  const DwarfInfo* d = bin.dwarf();
  REQUIRE(d);
  const DwarfFunction* fn = d->function(func);
  REQUIRE_MESSAGE(fn, func);
  const GoFunction* gf = bin.pclntab().functionNamed(func);
  REQUIRE(gf);
  auto l = layoutFunction(*d, *fn, gf->args);
  REQUIRE(l);
  auto p = planCaptures(*l);
  REQUIRE(p);
  return {func, std::move(*l), std::move(*p)};
}

Traced fromSignature(const std::string& sig) {
  auto parsed = parseUserSignature(sig);
  REQUIRE(parsed);
  auto l = layoutFromSignature(sig);
  REQUIRE_MESSAGE(l, (l ? "" : l.error().message));
  auto p = planCaptures(*l);
  REQUIRE(p);
  return {parsed->funcName, std::move(*l), std::move(*p)};
}

bool isRoot() { return ::geteuid() == 0; }

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("trace values: zoo's arguments and results, decoded from DWARF layouts") {
  if (!isRoot()) {
    MESSAGE("skipped: needs root for BPF");
    return;
  }
  for (std::string variant : {"default", "pie", "nopt"}) {
    CAPTURE(variant);
    auto bin = GoBinary::open(test::fixture("zoo", variant));
    REQUIRE(bin);
    std::vector<Traced> traced;
    for (const char* f : {"main.(*Server).Handle", "main.greet", "main.sum", "main.checkRecord", "main.shapeArea",
                          "main.scale", "main.parsePositive", "main.reverseStrings", "main.divmod",
                          "main.deepRecurse"})
      traced.push_back(fromDwarf(**bin, f));
    auto got = traceZoo(variant, traced);

    CHECK(got["main.(*Server).Handle"] ==
          Lines{"entry: s=&main.Server{Name: \"api\", Port: 8080}, req=main.Request{Path: \"/users\", ID: 7}",
                "return: ~r0=main.Response{Status: 200, Body: \"api:/users#7\"}, ~r1=nil",
                "entry: s=&main.Server{Name: \"api\", Port: 8080}, req=main.Request{Path: \"/missing\", ID: 8}",
                "return: ~r0=main.Response{Status: 404, Body: \"\"}, ~r1=error(*errors.errorString)0x… \"not found\""});
    CHECK(got["main.greet"] == Lines{"entry: name=\"gopher\"", "return: ~r0=\"hello, gopher\""});
    CHECK(got["main.sum"] == Lines{"entry: xs=[]int{len=10 cap=10: 1, 2, 3, 4, …}", "return: ~r0=55"});
    CHECK(got["main.checkRecord"] ==
          Lines{"entry: r=main.Record{X: 6, Y: 7, Name: \"zoo\"}", "return: ~r0=45"});
    CHECK(got["main.shapeArea"] == Lines{"entry: s=main.Shape(main.Rect)0x…", "return: ~r0=<unavailable: float in X0>",
                                         "entry: s=main.Shape(*main.Circle)0x…", "return: ~r0=<unavailable: float in X0>"});
    CHECK(got["main.scale"] ==
          Lines{"entry: v=<unavailable: float in X0>, k=4", "return: ~r0=<unavailable: float in X0>"});
    CHECK(got["main.parsePositive"] ==
          Lines{"entry: s=\"42\"", "return: ~r0=42, ~r1=nil", "entry: s=\"-7\"",
                "return: ~r0=0, ~r1=error(*errors.errorString)0x… \"not positive: -7\"", "entry: s=\"x\"",
                "return: ~r0=0, ~r1=error(*strconv.NumError)0x…"});
    CHECK(got["main.reverseStrings"] ==
          Lines{"entry: xs=[]string{len=3 cap=3: \"a\", \"b\", \"c\"}",
                "return: ~r0=[]string{len=3 cap=3: \"c\", \"b\", \"a\"}"});
    // Named results.
    CHECK(got["main.divmod"] == Lines{"entry: a=17, b=5", "return: q=3, r=2"});
    // A [64]byte passed on the stack (RSP+8), read from there; each level
    // increments pad[depth%64] before recursing (the first 16 elements show).
    const Lines& deep = got["main.deepRecurse"];
    REQUIRE(deep.size() == 2 * 10001);
    std::string zeros;
    for (int i = 0; i < 16; i++) zeros += i ? ", 0" : "0";
    CHECK(deep[0] == "entry: depth=10000, pad=[64]uint8{" + zeros + ", …}");
    CHECK(deep[2] == "entry: depth=9998, pad=[64]uint8{" + zeros.substr(0, zeros.size() - 1) + "1, …}");
    // The innermost call returns pad[0] + pad[63] = 156 + 156; each level adds 1.
    CHECK(deep[10001] == "return: ~r0=312");
    CHECK(deep.back() == "return: ~r0=10312");
  }
}

TEST_CASE("trace values: the stripped build, with user signatures") {
  if (!isRoot()) {
    MESSAGE("skipped: needs root for BPF");
    return;
  }
  std::vector<Traced> traced = {
      fromSignature("main.greet(name string) string"),
      fromSignature("main.sum(xs []int) int"),
      fromSignature("main.scale(v float64, k int) float64"),
      fromSignature("main.parsePositive(s string) (int, error)"),
      fromSignature("main.shapeArea(s interface{ Area() float64 }) float64"),
      fromSignature("main.bump(p *int64, by int64)"),
  };
  auto got = traceZoo("stripped", traced);
  CHECK(got["main.greet"] == Lines{"entry: name=\"gopher\"", "return: ~r0=\"hello, gopher\""});
  CHECK(got["main.sum"] == Lines{"entry: xs=[]int{len=10 cap=10: 1, 2, 3, 4, …}", "return: ~r0=55"});
  CHECK(got["main.scale"] == Lines{"entry: v=<unavailable: float in X0>, k=4", "return: ~r0=<unavailable: float in X0>"});
  // Type names from the runtime's own records: package names, as reflect prints them.
  CHECK(got["main.parsePositive"] ==
        Lines{"entry: s=\"42\"", "return: ~r0=42, ~r1=nil", "entry: s=\"-7\"",
              "return: ~r0=0, ~r1=error(*errors.errorString)0x… \"not positive: -7\"", "entry: s=\"x\"",
              "return: ~r0=0, ~r1=error(*strconv.NumError)0x…"});
  CHECK(got["main.shapeArea"] ==
        Lines{"entry: s=interface{ Area() float64 }(main.Rect)0x…", "return: ~r0=<unavailable: float in X0>",
              "entry: s=interface{ Area() float64 }(*main.Circle)0x…", "return: ~r0=<unavailable: float in X0>"});
  // *int64: the pointee is read (0, then 5 after the first bump).
  CHECK(got["main.bump"] == Lines{"entry: p=&0, by=5", "return:", "entry: p=&5, by=5", "return:"});
}
