// Delve as the oracle of the direct read. Every package variable of the
// allkinds fixture (every kind of Go value: maps of each shape, interfaces,
// channels, funcs, generics, a pointer cycle) is read from the process's
// memory without stopping it, and read by `read --strategy delve` with the
// Delve whose window covers the release: both must print the same, text and
// JSON, addresses aside (the two paths report some addresses differently).
// The program is quiescent after "ready", so both read the same values; a
// map's order depends on the process's hash seed, so both read one process.
//
// On every release of the matrix (tests/support/releases.hpp), plain and PIE:
// the two map layouts (buckets up to 1.23, Swiss tables from 1.24) and both
// itab layouts. Go 1.21, which no Debian Delve reads, is read directly only:
// every variable read, nothing unreadable, the target not stopped.
//
// And: a map written as fast as a goroutine can while it is read directly
// never crashes goscope or the target and never prints garbage: each read
// is a consistent map or says it changed during the read.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/releases.hpp"
#include "support/run.hpp"

using namespace goscope::test;

namespace {

std::string shq(const std::string& s) { return "'" + s + "'"; }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string masked(const std::string& s) {
  static const std::regex addr("0x[0-9a-f]+");
  return std::regex_replace(s, addr, "0x?");
}

// `expr = value (type)` lines, by expression.
std::map<std::string, std::string> textByExpr(const std::string& out) {
  std::map<std::string, std::string> m;
  for (const auto& line : splitLines(out)) {
    auto eq = line.find(" = ");
    if (eq != std::string::npos) m[line.substr(0, eq)] = masked(line.substr(eq + 3));
  }
  return m;
}

std::map<std::string, std::string> jsonByExpr(const std::string& out) {
  std::map<std::string, std::string> m;
  for (const auto& line : splitLines(out)) {
    if (line.empty() || line[0] != '{') continue;
    auto v = boost::json::parse(line).as_object();
    m[std::string(v.at("expr").as_string())] = masked(boost::json::serialize(v));
  }
  return m;
}

// Fields through structs and len/cap, which the direct read answers too
// (backend/memory/read_selector.hpp): of every kind len and cap apply to.
const std::vector<std::string> kSelections = {
    "main.vPoint.X",        "main.vOuter.In.Label", "main.vOuter.In.Tags", "main.vOuter.Meta",
    "main.vOuter.Any",      "main.vOuter.Ratio",    "len(main.vString)",   "len(main.vSlice)",
    "cap(main.vSlice)",     "len(main.vBytes)",     "len(main.vArray)",    "cap(main.vArray)",
    "len(main.vArrayStr)",  "len(main.vMapArrKey)", "len(main.vChan)",     "cap(main.vChan)",
    "len(main.vChanNil)",   "cap(main.vChanNil)",   "cap(main.vChanUnbuf)", "len(main.vChanStr)",
    "cap(main.vChanRecv)",  "len(main.vOuter.In.Tags)", "len(main.vOuter.Meta)"};

std::vector<std::string> variablesOf(const std::string& binary) {
  auto list = run(shq(binary) + " --list");
  REQUIRE(list.exitCode == 0);
  std::vector<std::string> names;
  for (const auto& n : splitLines(list.out))
    if (!n.empty()) names.push_back(n);
  REQUIRE(names.size() > 80);
  names.insert(names.end(), kSelections.begin(), kSelections.end());
  return names;
}

void compareWithDelve(const std::string& rel) {
  if (!releaseReady(rel)) return;
  std::optional<std::string> dlv;
  if (!debianDelveFor(releaseMinor(rel)).empty()) {
    dlv = delveFor(rel);
    if (!dlv) return;
  }
  size_t compared = 0;
  for (const std::string variant : {"default", "pie"}) {
    CAPTURE(variant);
    const std::string binary = fixture("allkinds", releaseVariant(rel, variant));
    const auto names = variablesOf(binary);
    compared = names.size();
    std::string exprs;
    for (const auto& n : names) exprs += " " + shq(n);

    Child prog({binary}, /*captureStdout=*/true);
    std::string ready;
    REQUIRE(prog.readLine(ready, 20000));
    REQUIRE(ready == "ready");
    const std::string p = " -p " + std::to_string(prog.pid());
    const std::string cli = dlv ? "GOSCOPE_DLV=" + shq(*dlv) + " " + shq(cliPath()) : shq(cliPath());

    for (bool json : {false, true}) {
      CAPTURE(json);
      const std::string fmt = json ? " --json" : "";
      auto direct = run(cli + " read --explain" + fmt + p + exprs);
      INFO("direct stderr: " << direct.err);
      REQUIRE(direct.exitCode == 0);
      CHECK(has(direct.err, "plan: direct-read"));
      CHECK(has(direct.err, "was not stopped"));
      auto d = json ? jsonByExpr(direct.out) : textByExpr(direct.out);
      CHECK(d.size() == names.size());
      if (!dlv) {
        // Nothing Delve could compare: at least every value was read.
        CHECK_FALSE(has(direct.out, "unreadable"));
        CHECK_FALSE(has(direct.out, "changed during the read"));
        continue;
      }
      auto delve = run(cli + " read --strategy delve" + fmt + p + exprs);
      INFO("delve stderr: " << delve.err);
      REQUIRE(delve.exitCode == 0);
      CHECK(has(delve.err, "was stopped"));
      auto o = json ? jsonByExpr(delve.out) : textByExpr(delve.out);
      CHECK(o.size() == names.size());
      for (const auto& n : names) {
        CAPTURE(n);
        REQUIRE(d.count(n));
        REQUIRE(o.count(n));
        CHECK(d[n] == o[n]);
      }
    }
    CHECK(prog.alive());
  }
  supportFact(dlv ? std::to_string(compared) + " variables, fields and len/cap, plain and PIE, text and JSON: equal to Delve " +
                        debianDelveFor(releaseMinor(rel)) + "'s"
                  : std::to_string(compared) + " variables, fields and len/cap read; no Debian Delve to compare with");
}

void churnedMap(const std::string& rel) {
  if (!releaseReady(rel)) return;
  Child prog({fixture("allkinds", releaseVariant(rel, "default")), "--churn"}, /*captureStdout=*/true);
  std::string ready;
  REQUIRE(prog.readLine(ready, 20000));
  REQUIRE(ready == "ready");
  const std::string p = std::to_string(prog.pid());
  // Every entry churnForever writes: "keyN" -> "keyN=M"; or "keyN" -> "",
  // an assignment caught between its two halves: the runtime's mapassign
  // places the key in a cleared slot and returns the slot's value, which
  // the caller stores after it (docs/go-runtime.md, "A map caught in an
  // assignment"). Seen in CI on a loaded machine: the writer preempted in
  // that window, both reads agreed.
  static const std::regex entry(R"re("key(\d+)": "(?:key(\d+)=(\d+))?")re");
  static const std::regex whole(
      R"re(^main\.churn = (map\[string\]string\{len=\d+(: .*)?\}|<changed during the read: .*>) \(map\[string\]string\)$)re");
  int consistent = 0, changed = 0;
  for (int i = 0; i < 30; i++) {
    auto r = runCli("read --explain -p " + p + " main.churn");
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    CHECK(has(r.err, "plan: direct-read"));
    const std::string line = splitLines(r.out).at(0);
    CAPTURE(line);
    REQUIRE(std::regex_match(line, whole));
    if (has(line, "<changed during the read")) {
      changed++;
      continue;
    }
    consistent++;
    size_t entries = 0;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), entry); it != std::sregex_iterator(); ++it) {
      if ((*it)[2].matched) CHECK((*it)[1] == (*it)[2]);  // a key with another key's value is garbage
      entries++;
    }
    // Every element shown is a well-formed entry: nothing else between them.
    const auto colon = line.find(": ");
    if (colon != std::string::npos) {
      size_t separators = 0;
      for (size_t k = colon; k < line.size(); k++) separators += line.compare(k, 6, ", \"key") == 0;
      CHECK(entries == separators + 1);
      CHECK(entries <= 64);
    }
  }
  MESSAGE(rel << ": " << consistent << " consistent reads, " << changed << " changed during the read");
  CHECK(consistent + changed == 30);
  CHECK(prog.alive());
}

}  // namespace

TEST_SUITE_BEGIN("release");

#define READ_ORACLE(R)                                                                                        \
  TEST_CASE("release " R ": read oracle, every kind of value read directly prints what Delve prints") {       \
    compareWithDelve(R);                                                                                      \
  }

READ_ORACLE("go1.19")
READ_ORACLE("go1.21")
READ_ORACLE("go1.22")
READ_ORACLE("go1.23")
READ_ORACLE("go1.24")
READ_ORACLE("go1.25")
READ_ORACLE("go1.26")
READ_ORACLE("go1.27")

// Both map layouts: buckets (1.19) and Swiss tables (1.24, 1.27).
TEST_CASE("release: read oracle, a map written hard while it is read never crashes and never prints garbage") {
  for (const std::string rel : {"go1.19", "go1.24", "go1.27"}) {
    CAPTURE(rel);
    churnedMap(rel);
  }
}

TEST_SUITE_END();
