// trace --svg: the stack counts --folded prints, drawn as an interactive
// flame graph (src/output/flame_svg.hpp); and --folded --json, one object
// per stack (it used to print text silently).
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <map>
#include <unistd.h>

#include "output/flame_svg.hpp"
#include "support/run.hpp"

using namespace goscope::test;

namespace {

// "a;b;c 12" lines -> {"a;b;c": 12}
std::map<std::string, uint64_t> foldedLines(const std::string& out) {
  std::map<std::string, uint64_t> m;
  for (const auto& l : splitLines(out)) {
    const auto sp = l.rfind(' ');
    REQUIRE(sp != std::string::npos);
    m[l.substr(0, sp)] = std::stoull(l.substr(sp + 1));
  }
  return m;
}

}  // namespace

TEST_CASE("trace --svg: a flame graph that parses as XML and holds every folded stack's frames with their counts") {
  const std::string svgPath = "/tmp/goscope-flame-" + std::to_string(::getpid()) + ".svg";
  // One run, both outputs: the folded lines on stdout and the picture of the same counts.
  auto r = runCli("trace --folded --svg " + svgPath + " -c '" + fixture("zoo") + " --rounds 2' main.add main.sleepWork 'main.(*Server).Handle'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find("wrote a flame graph of ") != std::string::npos);
  const auto folded = foldedLines(r.out);
  REQUIRE(folded.size() >= 3);
  auto parsed = run("python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' " + svgPath);
  CHECK_MESSAGE(parsed.exitCode == 0, parsed.err);
  const std::string svg = slurpFile(svgPath);
  // Every prefix of every stack is one frame: its depth, its name, and the
  // sum of the counts of the stacks through it.
  std::map<std::pair<std::string, size_t>, uint64_t> frames;  // (prefix, depth) -> count
  uint64_t total = 0;
  for (const auto& [stack, n] : folded) {
    total += n;
    size_t depth = 0;
    for (size_t end = 0; end != std::string::npos;) {
      end = stack.find(';', end + (depth ? 1 : 0));
      frames[{stack.substr(0, end), ++depth}] += n;
    }
  }
  CHECK(svg.find("<title>all (" + std::to_string(total) + " samples, 100.00%)</title>") != std::string::npos);
  for (const auto& [key, n] : frames) {
    const auto& [prefix, depth] = key;
    const std::string name = prefix.substr(prefix.rfind(';') == std::string::npos ? 0 : prefix.rfind(';') + 1);
    const std::string want = "data-w=\"" + std::to_string(n) + "\" data-d=\"" + std::to_string(depth) + "\"><title>" +
                             goscope::output::xmlEscape(name) + " (" + std::to_string(n) + (n == 1 ? " sample" : " samples");
    CAPTURE(want);
    CHECK(svg.find(want) != std::string::npos);
  }
  // --svg alone: the picture, and nothing on stdout.
  auto alone = runCli("trace --svg " + svgPath + " -c '" + fixture("zoo") + " --rounds 1' main.add");
  REQUIRE_MESSAGE(alone.exitCode == 0, alone.err);
  CHECK(alone.out.empty());
  CHECK(slurpFile(svgPath).find("main.add (11 samples") != std::string::npos);
  std::filesystem::remove(svgPath);
}

// The last reading of the stacks (every stack read and named: seconds for a
// program of a hundred thousand stacks) comes after the detach, so that
// neither the target nor a Ctrl-C waits for it with the probes on (-v gives
// the order).
TEST_CASE("trace --folded: the probes come off before the session's stacks are read and named") {
  auto r = runCli("trace --folded -v -c '" + fixture("zoo") + " --rounds 2' main.add main.sleepWork");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  const auto lines = splitLines(r.err);
  long off = -1, lastRead = -1;
  for (size_t i = 0; i < lines.size(); i++) {
    if (lines[i].find("session: probes off") != std::string::npos) off = static_cast<long>(i);
    if (lines[i].find("stacks: ") != std::string::npos && lines[i].find("read and named") != std::string::npos)
      lastRead = static_cast<long>(i);
  }
  INFO(r.err);
  REQUIRE(off >= 0);
  REQUIRE(lastRead >= 0);
  CHECK(off < lastRead);
  CHECK(lines[static_cast<size_t>(lastRead)].find("the probes off") != std::string::npos);
  CHECK_FALSE(r.out.empty());
}

TEST_CASE("trace --folded --json: one {stack, count} object per stack, root first") {
  auto r = runCli("trace --folded --json -c '" + fixture("zoo") + " --rounds 2' main.add main.sleepWork");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  bool found = false;
  const auto lines = splitLines(r.out);
  REQUIRE_FALSE(lines.empty());
  for (const auto& l : lines) {
    CAPTURE(l);
    auto o = boost::json::parse(l).as_object();  // every line is JSON (was: folded text)
    REQUIRE(o.contains("stack"));
    REQUIRE(o.contains("count"));
    const auto& st = o["stack"].as_array();
    const std::string leaf(st.back().as_string());
    CHECK((leaf == "main.add" || leaf == "main.sleepWork"));
    const size_t n = st.size();
    if (n >= 4 && st[n - 4] == "runtime.main" && st[n - 3] == "main.main" && st[n - 2] == "main.runRound" && leaf == "main.add") {
      CHECK(o["count"].to_number<int64_t>() == 22);  // as the folded line "...;runtime.main;main.main;main.runRound;main.add 22"
      found = true;
    }
  }
  CHECK(found);
}
