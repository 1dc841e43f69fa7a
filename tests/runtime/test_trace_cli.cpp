// goscope trace end to end: arguments and results decoded by their Go types
// on every variant (a user signature on the stripped build), the JSON
// contract, stacks with the direct caller present at the entry, folded stacks.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;

namespace {

}  // namespace

TEST_CASE("trace --json: main.add(x=42, y=13) = 55 on every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    std::string spec = v == "stripped" ? "'main.add(x int, y int) int'" : "main.add";
    auto r = runCli("trace --json -c '" + fixture("functions", v) + " --repeat 2' " + spec);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto calls = callObjects(r.out);
    REQUIRE(calls.size() == 2);
    for (auto& o : calls) {
      for (const char* k : {"func", "pid", "goid", "ts_ns", "args", "results"}) CHECK(o.contains(k));
      CHECK(o["func"].as_string() == "main.add");
      CHECK(o["args"].as_object().at("x").as_int64() == 42);
      CHECK(o["args"].as_object().at("y").as_int64() == 13);
      REQUIRE(o["results"].as_array().size() == 1);
      CHECK(o["results"].as_array()[0].as_int64() == 55);
      CHECK(o["goid"].as_int64() == 1);  // main runs on goroutine 1
      CHECK(o["duration_ns"].as_int64() > 0);
    }
    // The stream ends with what the session cost the target (issue #11).
    auto lines = splitLines(r.out);
    REQUIRE(!lines.empty());
    auto last = boost::json::parse(lines.back()).as_object();
    REQUIRE(last.contains("session_cost"));
    auto& cost = last["session_cost"].as_object();
    CHECK(cost["stopped_ms"].to_number<double>() == 0);  // BPF: the target never stopped
    CHECK(cost["peak_rate"].to_number<int64_t>() >= 0);
    CHECK(cost.contains("cpu_ms"));
  }
}

TEST_CASE("trace: a signature that contradicts DWARF is warned about and DWARF's is used, unless forced") {
  const std::string cmd = "trace --json -c '" + fixture("functions") + " --repeat 1' 'main.add(x string, y string) string'";
  auto r = runCli(cmd);
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find("goscope: warning: the signature `main.add(x string, y string) string` disagrees with the binary's DWARF, "
                   "which says main.add(x int, y int) int: DWARF's is used (hint: --force-signature uses yours)") !=
        std::string::npos);
  auto calls = callObjects(r.out);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0]["args"].as_object().at("x").as_int64() == 42);  // was: read as a string, silently
  CHECK(calls[0]["results"].as_array()[0].as_int64() == 55);

  // Forced, a signature is still held to the function table's argument
  // frame: two strings make 32 bytes where main.add's is 16.
  auto wrongFrame = runCli(cmd + " --force-signature");
  CHECK(wrongFrame.exitCode == 2);
  CHECK(wrongFrame.err.find("makes an argument frame of 32 bytes") != std::string::npos);
  // One of the same frame is decoded as it was told.
  auto forced = runCli("trace --json -c '" + fixture("functions") + " --repeat 1' 'main.add(x *int, y int) int' --force-signature");
  REQUIRE_MESSAGE(forced.exitCode == 0, forced.err);
  CHECK(forced.err.find("yours is used (--force-signature)") != std::string::npos);
  auto fc = callObjects(forced.out);
  REQUIRE(fc.size() == 1);
  CHECK_FALSE(fc[0]["args"].as_object().at("x").is_int64());  // decoded as the pointer it was told

  // A signature that agrees with DWARF (names aside) is used without a word.
  auto same = runCli("trace --json -c '" + fixture("functions") + " --repeat 1' 'main.add(a int, b int) int'");
  REQUIRE_MESSAGE(same.exitCode == 0, same.err);
  CHECK(same.err.find("warning") == std::string::npos);
}

// The goids fixture calls main.work(i) once on each of 20 new goroutines and
// prints "work i=<i> goid=<id>" with the id runtime.Stack reports: the trace
// must give every call that same id (issue #13: goroutine ids read at a
// fixed offset of runtime.g were the status on Go 1.23/1.24).
TEST_CASE("trace: goroutine ids equal the ones the program reports for itself, on every variant") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    std::string spec = v == "stripped" ? "'main.work(i int) int'" : "main.work";
    auto r = runCli("trace --json -c '" + fixture("goids", v) + " -n 20' " + spec);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    // The program's own lines (its stdout goes to goscope's stderr).
    std::map<int64_t, int64_t> own;  // i -> goid
    for (const auto& l : splitLines(r.err)) {
      long long i = 0, id = 0;
      if (std::sscanf(l.c_str(), "work i=%lld goid=%lld", &i, &id) == 2) own[i] = id;
    }
    REQUIRE(own.size() == 20);
    std::map<int64_t, int64_t> traced;
    for (auto& o : callObjects(r.out)) traced[o["args"].as_object().at("i").to_number<int64_t>()] = o["goid"].to_number<int64_t>();
    CHECK(traced == own);
    std::set<int64_t> distinct;
    for (const auto& [i, id] : own) distinct.insert(id);
    CHECK(distinct.size() == 20);  // a new goroutine per call
  }
}

TEST_CASE("trace: strings, structs, errors, floats shown as unavailable") {
  auto r = runCli("trace -c '" + fixture("zoo") + " --rounds 1' main.greet 'main.(*Server).Handle' main.scale main.divmod");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.out.find("main.greet(name=\"gopher\") = \"hello, gopher\"") != std::string::npos);
  CHECK(r.out.find("req=main.Request{Path: \"/users\", ID: 7}) = main.Response{Status: 200, Body: \"api:/users#7\"}, nil") !=
        std::string::npos);
  CHECK(r.out.find("\"not found\"") != std::string::npos);
  CHECK(r.out.find("main.divmod(a=17, b=5) = q=3, r=2") != std::string::npos);
  // A float argument lives in X0: BPF cannot see it, and says so.
  CHECK(r.out.find("main.scale(v=<unavailable: float in X0>, k=4)") != std::string::npos);
}

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("trace: a stripped binary without a signature shows the runtime's traceback layout, never bare registers") {
  auto r = runCli("trace -c '" + fixture("functions", "stripped") + "' main.add main.main");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  // add(x, y int): two words in RAX and RBX; no result (the binary does not
  // say how many words it returns); main takes no arguments.
  CHECK(contains(r.out, "goid=1 main.add(0x2a, 0xd)  ["));
  CHECK(contains(r.out, "goid=1 main.main()"));
  CHECK_FALSE(contains(r.out, "rax="));
  // Floats in a leaf that never grows its stack: which words are floats is
  // not known, so none is placed (not guessed), and the reason is in --explain.
  auto z = runCli("trace --explain -c '" + fixture("zoo", "stripped") + " --rounds 1' main.Point.Dist");
  REQUIRE_MESSAGE(z.exitCode == 0, z.err);
  CHECK(contains(z.out, "main.Point.Dist({<unplaced>, <unplaced>})"));
  CHECK(contains(z.err, "main.Point.Dist: types from layout: the runtime's traceback layout: ({w, w}), placed: unknown: it never grows its stack "
                   "and uses float registers"));
}

TEST_CASE("trace --explain: where each function's types come from, named as list --json's signature_from") {
  auto s = runCli("trace --explain -c '" + fixture("zoo", "stripped") +
                  " --rounds 1' 'main.add(x int, y int) int' 'main.(*Truck).Ship' 'main.(*Server).Handle' main.checkRecord");
  REQUIRE_MESSAGE(s.exitCode == 0, s.err);
  CHECK(contains(s.err, "main.add: types from given: the signature on the command line"));
  CHECK(contains(s.err, "main.(*Truck).Ship: types from interface: its receiver's method table, checked against the traceback "
                        "layout: main.(*Truck).Ship(recv *main.Truck, p0 string, p1 int) (int, error)"));
  CHECK(contains(s.err, "main.(*Server).Handle: types from receiver: its receiver's named type's runtime type record"));
  CHECK(contains(s.err, "(recv *main.Server, {{w, w}, w}), placed: "));
  CHECK(contains(s.err, "main.checkRecord: types from layout: the runtime's traceback layout: ({w, w, {w, w}}), placed: "));
  auto d = runCli("trace --explain -c '" + fixture("zoo") + " --rounds 1' main.checkRecord");
  REQUIRE_MESSAGE(d.exitCode == 0, d.err);
  CHECK(contains(d.err, "main.checkRecord: types from dwarf"));
}

TEST_CASE("count and latency take a signature as trace does: --filter on a stripped binary counts what trace shows") {
  const std::string zoo = "'" + fixture("zoo", "stripped") + " --rounds 3' ";
  const std::string sig = "'main.parsePositive(s string) (int, error)' --filter 's == \"42\"'";
  auto c = runCli("count --json -c " + zoo + sig);
  REQUIRE_MESSAGE(c.exitCode == 0, c.err);
  auto t = runCli("trace --json -c " + zoo + sig);
  REQUIRE_MESSAGE(t.exitCode == 0, t.err);
  const auto traced = callObjects(t.out);
  for (const auto& o : traced) CHECK(o.at("args").as_object().at("s") == "42");
  long long counted = -1;
  for (const auto& o : jsonObjects(c.out))
    if (o.contains("final") && o.at("func") == "main.parsePositive") counted = o.at("count").to_number<long long>();
  CHECK(counted == 3);  // "42" once a round
  CHECK(counted == static_cast<long long>(traced.size()));
  auto l = runCli("latency --json -c " + zoo + "'main.parsePositive(s string) (int, error)'");
  REQUIRE_MESSAGE(l.exitCode == 0, l.err);
  CHECK(contains(l.out, "{\"func\":\"main.parsePositive\",\"count\":9,"));  // "42", "-7", "x" a round
  // Without the signature the arguments have no names, and the filter says how to give them.
  auto bare = runCli("count -c " + zoo + "main.parsePositive --filter 's == \"42\"'");
  CHECK(bare.exitCode == 2);
  CHECK(contains(bare.err, "give its signature"));
}

TEST_CASE("trace --stack: the direct caller is there at the entry — --folded counts stacks") {
  for (const auto& v : kVariants) {
    CAPTURE(v);
    auto r = runCli("trace --json --stack -c '" + fixture("functions", v) + "' main.add");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto calls = callObjects(r.out);
    REQUIRE(calls.size() == 1);
    auto& st = calls[0]["stack"].as_array();
    REQUIRE(st.size() >= 3);
    CHECK(st[0].as_string().starts_with("main.add "));
    CHECK(st[1].as_string().starts_with("main.main "));
    CHECK(st[2].as_string().starts_with("runtime.main "));
  }
  auto f = runCli("trace --folded -c '" + fixture("zoo") + " --rounds 2' main.add main.sleepWork");
  REQUIRE_MESSAGE(f.exitCode == 0, f.err);
  CHECK(f.out.find("runtime.main;main.main;main.runRound;main.add 22\n") != std::string::npos);
  CHECK(f.out.find("main.worker;main.processJob;main.sleepWork 32\n") != std::string::npos);
  // Every line ends in a probed function with its count (a stack the kernel
  // could not record is counted on stderr, never shown as its caller alone),
  // and the command's own stdout ("ready", "zoo: ok ...") went to stderr.
  for (const auto& line : splitLines(f.out)) {
    CAPTURE(line);
    const std::string stack = line.substr(0, line.rfind(' '));
    CHECK((stack.ends_with(";main.add") || stack.ends_with(";main.sleepWork")));
  }
  CHECK(f.out.find("zoo:") == std::string::npos);
  CHECK(f.out.find("ready") == std::string::npos);
}

TEST_CASE("trace --stack: a stack deeper than the kernel records is marked cut, never shown as complete") {
  // zoo's deepRecurse recurses 10,000 deep: most calls sit under more than
  // the kernel's 127 frames (was: 128 frames and no marker).
  // The recursion's 10,000 calls come in a burst of ~1 KB events; with no
  // measured rate the ring (16 MB) fills while a loaded machine runs
  // goscope late, losing the last returns: the outermost, whole stacks. A
  // rate sizes the ring for the burst (--expect-rate), so that none is lost.
  auto r = runCli("trace --json --stack --expect-rate 40000 -c '" + fixture("zoo") + " --rounds 1' main.deepRecurse");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  REQUIRE_MESSAGE(r.err.find("events lost") == std::string::npos, r.err);
  size_t cut = 0, whole = 0;
  for (auto& c : callObjects(r.out)) {
    if (!c.contains("stack")) continue;  // a return whose entry came before the attach
    REQUIRE(c.contains("stack_cut"));
    const auto& st = c["stack"].as_array();
    if (c["stack_cut"].as_bool()) {
      cut++;
      CHECK(st.size() == 128);  // the kernel's 127 and the direct caller
    } else {
      whole++;
      CHECK(st.size() < 128);
      // A whole stack reaches the goroutine's start.
      CHECK(st.back().as_string().starts_with("runtime.goexit "));
    }
  }
  CHECK(cut > 5000);
  CHECK(whole > 50);
  auto f = runCli("trace --folded -c '" + fixture("zoo") + " --rounds 1' main.deepRecurse");
  REQUIRE_MESSAGE(f.exitCode == 0, f.err);
  size_t cutLines = 0;
  for (const auto& line : splitLines(f.out)) {
    CAPTURE(line);
    const std::string stack = line.substr(0, line.rfind(' '));
    CHECK(stack.ends_with(";main.deepRecurse"));
    // A cut stack starts at [cut]; a whole one at the goroutine's start.
    if (stack.starts_with("[cut];")) cutLines++;
    else CHECK(stack.starts_with("runtime.goexit;"));
  }
  CHECK(cutLines > 0);
  CHECK(f.err.find("had stacks deeper than the kernel records (127 frames): their lines start at [cut]") != std::string::npos);
}

TEST_CASE("trace: bad input") {
  CHECK(runCli("trace -c '" + fixture("functions", "stripped") + "' 'main.add(x Foo) int'").exitCode == 2);
  CHECK(runCli("trace -b " + fixture("functions") + " main.nothing -d 1").exitCode == 5);
  CHECK(runCli("trace -p 4000000 main.add").exitCode == 3);
  CHECK(runCli("trace --stack --folded -b " + fixture("functions") + " main.add").exitCode == 2);
}

// A reader that goes away (`| head -1`) ends the session at once: the probes
// come off and the target runs on at full speed (issue #12, item 3).
TEST_CASE("trace and count end as soon as their output pipe closes") {
  Counter c;
  double before = c.rate();
  for (const std::string sub : {"trace", "count -i 0.2"}) {
    const auto t0 = std::chrono::steady_clock::now();
    // goscope's own exit status goes to stderr; head's is the pipeline's.
    auto r = run("{ " + cliPath() + " " + sub + " -p " + std::to_string(c.pid()) +
                 " main.doWork 2>/dev/null; echo $? >&2; } | head -1");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(sub << ": " << r.out << r.err);
    CHECK(splitLines(r.out).size() == 1);
    CHECK(r.err == "0\n");  // goscope ends by itself, not killed by SIGPIPE
    CHECK(s < 10);           // was: never, while the target ran ~100x slower
  }
  checkUnharmed(c, before);
}

TEST_CASE("trace: the BPF programs load beside the analysis unless a rate sizes the ring, and either way the calls are right") {
  const std::string prog = fixture("functions", "default") + " --repeat 2";
  // No rate known: loaded on another thread while the binary is read
  // (engine_ahead.hpp), then taken as they are.
  auto ahead = runCli("-v trace --json --strategy bpf -c '" + prog + "' main.add");
  REQUIRE_MESSAGE(ahead.exitCode == 0, ahead.err);
  CHECK(ahead.err.find("programs loaded during the analysis") != std::string::npos);
  // A rate sizes the ring from the capture plan, known only after the
  // selection: loaded then, once.
  auto sized = runCli("-v trace --json --strategy bpf --expect-rate 1000 -c '" + prog + "' main.add");
  REQUIRE_MESSAGE(sized.exitCode == 0, sized.err);
  CHECK(sized.err.find("programs loaded during the analysis") == std::string::npos);
  CHECK(sized.err.find("ring buffer") != std::string::npos);
  for (const auto* r : {&ahead, &sized}) {
    auto calls = callObjects(r->out);
    REQUIRE(calls.size() == 2);
    for (auto& o : calls) CHECK(o["results"].as_array()[0].as_int64() == 55);
  }
}

namespace {

// The call objects of `func`, in order.
std::vector<boost::json::object> callsOf(const std::string& out, const std::string& func) {
  std::vector<boost::json::object> v;
  for (auto& o : callObjects(out))
    if (o["func"] == func.c_str()) v.push_back(std::move(o));
  return v;
}

}  // namespace

// A value read in part (--max-string, the first elements of a slice or an
// array) is marked in JSON with its full length, as text ends it with `…`:
// was a plain string or array, which reads as the whole value. The zoo's
// calls are known (fixtures/go/zoo/main.go) and routes' paths too
// (fixtures/go/routes/main.go: one of 101 bytes).
TEST_CASE("trace --json: a value shown in part says cut and its full length, and results are named as text names them") {
  auto r = runCli("trace --json --max-string 8 -c '" + fixture("zoo") +
                  " --rounds 1' main.countVowels main.greet main.sum main.deepRecurse main.divmod main.add");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  // countVowels("goscope probes running programs"): 31 bytes, 8 read.
  auto cv = callsOf(r.out, "main.countVowels");
  REQUIRE(cv.size() == 1);
  auto& s = cv[0]["args"].as_object()["s"].as_object();
  CHECK(s["cut"] == true);
  CHECK(s["len"] == 31);
  CHECK(s["value"] == "goscope ");
  CHECK(s["type"] == "string");
  // greet("gopher"): 6 bytes, whole: a plain string; its result "hello, gopher" (13) cut.
  auto g = callsOf(r.out, "main.greet");
  REQUIRE(g.size() == 1);
  CHECK(g[0]["args"].as_object()["name"] == "gopher");
  auto& hello = g[0]["results"].as_array().at(0).as_object();
  CHECK(hello["cut"] == true);
  CHECK(hello["len"] == 13);
  CHECK(hello["value"] == "hello, g");
  // sum([]int{1..10}): 4 elements read of 10.
  auto sm = callsOf(r.out, "main.sum");
  REQUIRE(sm.size() == 1);
  auto& xs = sm[0]["args"].as_object()["xs"].as_object();
  CHECK(xs["len"] == 10);
  CHECK(xs["cut"] == true);
  CHECK(xs["elems"] == boost::json::parse("[1,2,3,4]"));
  // deepRecurse(depth, pad [64]byte): 16 of the 64 bytes shown.
  auto dr = callsOf(r.out, "main.deepRecurse");
  REQUIRE(dr.size() > 100);
  for (size_t i = 0; i < 3; i++) {
    auto& pad = dr[i]["args"].as_object()["pad"].as_object();
    CHECK(pad["cut"] == true);
    CHECK(pad["len"] == 64);
    CHECK(pad["type"] == "[64]uint8");
    CHECK(pad["elems"].as_array().size() == 16);
  }
  // divmod(17, 5) = q=3, r=2: named in text, and now in JSON; add's result
  // is unnamed in both.
  auto dm = callsOf(r.out, "main.divmod");
  REQUIRE(dm.size() == 1);
  CHECK(dm[0]["results"] == boost::json::parse("[3,2]"));
  CHECK(dm[0]["result_names"] == boost::json::parse(R"(["q","r"])"));
  for (auto& a : callsOf(r.out, "main.add")) CHECK_FALSE(a.contains("result_names"));

  // The same in text: the cut string ends in …(+N bytes), the results named.
  auto t = runCli("trace --max-string 8 -c '" + fixture("zoo") + " --rounds 1' main.countVowels main.divmod");
  REQUIRE_MESSAGE(t.exitCode == 0, t.err);
  CHECK(t.out.find("main.countVowels(s=\"goscope …\"(+23 bytes)) = 9") != std::string::npos);
  CHECK(t.out.find("main.divmod(a=17, b=5) = q=3, r=2") != std::string::npos);

  // At the default --max-string (64), routes' 101-byte path is cut, the others whole.
  auto p = runCli("trace --json -c '" + fixture("routes") + "' main.route");
  REQUIRE_MESSAGE(p.exitCode == 0, p.err);
  auto routes = callsOf(p.out, "main.route");
  REQUIRE(routes.size() == 7);
  size_t cut = 0;
  for (auto& o : routes) {
    auto& path = o["args"].as_object()["path"];
    if (path.is_string()) continue;
    cut++;
    CHECK(path.as_object()["len"] == 101);
    CHECK(path.as_object()["value"].as_string().size() == 64);
    CHECK(o["results"].as_array().at(0) == 101);
  }
  CHECK(cut == 1);
}

// A call already running when the probes went in shows only its return: it
// is left out (was: `main.slow(?) = …`, "args":null,"duration_ns":null with
// no word why) and said on stderr, and -n counts whole calls only (was: -n 1
// printed only that return). routes --slow-ms 400 sleeps in main.slow nearly
// all the time: the attach lands inside a call.
TEST_CASE("trace: a call entered before the attach is left out and said, and -n counts whole calls") {
  Child routes({fixture("routes"), "--rounds", "0", "--slow-ms", "400"}, true);
  std::string line;
  REQUIRE(routes.readLine(line, 10000));
  REQUIRE(line == "ready");
  const std::string pid = std::to_string(routes.pid());
  for (const bool json : {true, false}) {
    CAPTURE(json);
    auto r = runCli(std::string("trace -n 1 ") + (json ? "--json " : "") + "-p " + pid + " main.slow");
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(r.err.find("hit count reached") != std::string::npos);
    CHECK(r.err.find("1 returns of calls already running when probes were attached: not shown (entered before the "
                     "attach)") != std::string::npos);
    if (json) {
      auto calls = callObjects(r.out);
      REQUIRE(calls.size() == 1);
      CHECK(calls[0]["args"] == boost::json::parse(R"({"ms":400})"));
      CHECK(calls[0]["results"] == boost::json::parse("[400]"));
      CHECK(calls[0]["duration_ns"].to_number<int64_t>() >= 400'000'000);
    } else {
      auto lines = splitLines(r.out);
      REQUIRE(lines.size() == 1);
      CHECK(lines[0].find(" main.slow(ms=400) = 400  [") != std::string::npos);
      CHECK(lines[0].find("(?)") == std::string::npos);
    }
  }
  CHECK(routes.alive());
}
