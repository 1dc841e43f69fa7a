// goscope top in a real terminal: a tmux pane (a server of this test's own,
// on its own socket), read back with capture-pane and driven with
// send-keys, against the pacer fixture (main.scale at the rate it is told,
// main.report once a second). What the screen shows is checked against
// `count -i 1` run beside it; after `q`, goscope is gone and the target
// runs on with its code as in its file.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <boost/json.hpp>
#include <filesystem>
#include <sstream>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

// One tmux session on a server of its own (-L), killed by its name at the
// end whatever happened.
class Pane {
 public:
  explicit Pane(const std::string& command) {
    static int serial = 0;
    name_ = "goscope-top-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    exitFile_ = "/tmp/" + name_ + ".exit";
    errFile_ = "/tmp/" + name_ + ".err";
    std::filesystem::remove(exitFile_);
    // The shell writes goscope's stderr and exit code where the test reads
    // them (the screen is stdout).
    const std::string inner = command + " 2> " + errFile_ + "; echo $? > " + exitFile_;
    auto r = run(tmux() + " new-session -d -s " + name_ + " -x 160 -y 40 '" + inner + "'");
    REQUIRE_MESSAGE(r.exitCode == 0, "tmux: " << r.err);
  }
  ~Pane() {
    run(tmux() + " kill-session -t " + name_ + " 2>/dev/null");
    std::filesystem::remove(exitFile_);
    std::filesystem::remove(errFile_);
  }
  std::string screen() const { return run(tmux() + " capture-pane -p -t " + name_ + " 2>/dev/null").out; }
  void keys(const std::string& k) const { run(tmux() + " send-keys -t " + name_ + " " + k); }
  // goscope's exit code once the pane's shell wrote it, -1 before.
  int exitCode() const {
    const std::string s = slurpFile(exitFile_);
    return s.empty() ? -1 : std::stoi(s);
  }
  std::string errors() const { return slurpFile(errFile_); }
  // The pane killed, as when its window is closed: the terminal hangs up,
  // and the processes on it get SIGHUP.
  void kill() const { run(tmux() + " kill-session -t " + name_); }

 private:
  std::string tmux() const { return "tmux -L goscope-top-test-" + std::to_string(::getpid()); }
  std::string name_, exitFile_, errFile_;
};

struct ScreenRow {
  double rate = -1;
  long long total = -1;
  std::string func;
};

// The table's rows: the lines under the header (the one naming FUNCTION)
// that start with two numbers, in screen order.
std::vector<ScreenRow> rowsOf(const std::string& screen) {
  std::vector<ScreenRow> rows;
  bool table = false;
  for (const auto& line : splitLines(screen)) {
    if (line.find("FUNCTION") != std::string::npos) {
      table = true;
      continue;
    }
    if (!table) continue;
    std::istringstream in(line);
    ScreenRow r;
    std::string word, last;
    if (!(in >> r.rate >> r.total)) continue;
    while (in >> word) last = word;
    r.func = last;
    rows.push_back(r);
  }
  return rows;
}

std::vector<std::string> namesOf(const std::vector<ScreenRow>& rows) {
  std::vector<std::string> v;
  for (const auto& r : rows) v.push_back(r.func);
  return v;
}

std::optional<ScreenRow> rowNamed(const std::string& screen, const std::string& func) {
  for (const auto& r : rowsOf(screen))
    if (r.func == func) return r;
  return std::nullopt;
}

// The figures of a line "...: X% of one CPU in the last second, Y%
// since attached (...)" (top's cost line) or "... (Z% of one CPU, budget
// ...)" (a child's cost line at its end): the numbers before each "% ".
std::vector<double> percentsIn(const std::string& line) {
  std::vector<double> v;
  for (size_t at = line.find('%'); at != std::string::npos; at = line.find('%', at + 1)) {
    size_t b = at;
    while (b > 0 && (std::isdigit(static_cast<unsigned char>(line[b - 1])) || line[b - 1] == '.')) b--;
    if (b < at) v.push_back(std::stod(line.substr(b, at - b)));
  }
  return v;
}

// top's cost line on the screen: {in the last second, since attached}, or none.
std::optional<std::pair<double, double>> costShown(const std::string& screen) {
  for (const auto& line : splitLines(screen)) {
    if (line.rfind("cost to the target: ", 0) != 0) continue;
    auto p = percentsIn(line);
    if (p.size() >= 2 && line.find("since attached") != std::string::npos) return std::pair{p[0], p[1]};
  }
  return std::nullopt;
}

double median(std::vector<double> v) {
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string topCommand(pid_t pid, const std::string& rest) {
  return cliPath() + " top -p " + std::to_string(pid) + (rest.empty() ? "" : " " + rest);
}

// After `q`: goscope exits 0, nothing of it is left on the target, whose
// code equals its file, and it runs on (its status lines still come).
void checkQuitClean(Pane& pane, Child& pacer, const ElfFile& elf) {
  pane.keys("q");
  CHECK_MESSAGE(waitUntil([&] { return pane.exitCode() >= 0; }, 40s), "goscope top did not exit after q");
  CHECK(pane.exitCode() == 0);
  // Its child's cost line, printed once the screen is gone.
  CHECK_MESSAGE(pane.errors().find("goscope: cost to the target: ") != std::string::npos, pane.errors());
  CHECK_MESSAGE(waitUntil([&] { return goscopesFor(pacer.pid()).empty(); }, 15s), "a goscope process naming the PID is left");
  CHECK(textDifference(pacer.pid(), elf) == 0);
  CHECK(pacer.alive());
  std::string line;
  for (int i = 0; i < 50 && pacer.readLine(line, 10);) i++;  // what queued while top ran
  CHECK(pacer.readLine(line, 3000));
  CHECK(line.rfind("pacer: ", 0) == 0);
}

}  // namespace

TEST_CASE("top: the pacer's main.scale shows the rate count -i 1 measures beside it, and q leaves the target unharmed") {
  Child pacer({fixture("pacer"), "--rate", "200"}, true);
  auto elf = ElfFile::open(fixture("pacer"));
  REQUIRE(elf.has_value());
  std::string line;
  REQUIRE(pacer.readLine(line, 5000));
  Pane pane(topCommand(pacer.pid(), "main.scale"));
  REQUIRE_MESSAGE(waitUntil([&] { auto r = rowNamed(pane.screen(), "main.scale"); return r && r->rate > 0; }, 40s),
                  "no main.scale row with a rate on the screen:\n" << pane.screen());

  // count -i 1 on the same function, and the screen read once a second, in
  // the same seconds.
  CommandResult count;
  std::thread counter([&] { count = runCli("count --json -i 1 -d 6 -p " + std::to_string(pacer.pid()) + " main.scale"); });
  std::vector<double> shown;
  std::optional<std::pair<double, double>> cost;
  std::this_thread::sleep_for(1500ms);
  for (int i = 0; i < 5; i++) {
    std::this_thread::sleep_for(1s);
    const std::string screen = pane.screen();
    if (auto r = rowNamed(screen, "main.scale")) shown.push_back(r->rate);
    if (auto c = costShown(screen)) cost = c;
  }
  counter.join();
  REQUIRE(count.exitCode == 0);
  std::vector<double> counted;
  for (const auto& l : splitLines(count.out)) {
    boost::system::error_code ec;
    auto v = boost::json::parse(l, ec);
    if (ec || !v.is_object() || !v.as_object().contains("rate")) continue;
    counted.push_back(v.as_object().at("rate").to_number<double>());
  }
  REQUIRE(shown.size() >= 3);
  REQUIRE(counted.size() >= 3);
  const double s = median(shown), c = median(counted);
  MESSAGE("main.scale calls/s: top median " << s << ", count -i 1 median " << c << " (load " << slurpFile("/proc/loadavg") << ")");
  CHECK(s > 0);
  CHECK(std::abs(s - c) <= 0.10 * c);
  // The cost line at the bottom: numbers, refreshed each second.
  REQUIRE_MESSAGE(cost, "no cost line on the screen:\n" << pane.screen());
  CHECK(cost->first > 0);
  CHECK(cost->second > 0);
  checkQuitClean(pane, pacer, **elf);
  // ... and the cost its count child prints at its end (on top's stderr
  // after q). Both are that one session's CPU taken so far over its time so
  // far, each call priced by the same per-hit figure: they differ only by
  // the calls after the screen was last read, which move the average only
  // as far as the call rate moves, and the pacer holds its rate within the
  // 10% checked above. Plus each line's rounding (the end line prints 2
  // decimals, the screen 3).
  double atEnd = -1;
  for (const auto& l : splitLines(pane.errors()))
    if (l.find("cost to the target: ") != std::string::npos && !percentsIn(l).empty()) atEnd = percentsIn(l)[0];
  MESSAGE("cost: top's line " << cost->second << "% since attached, count's end line " << atEnd << "%");
  REQUIRE(atEnd > 0);
  CHECK(std::abs(cost->second - atEnd) <= 0.10 * atEnd + 0.005 + 0.0005);
}

TEST_CASE("top: a sort key reorders the rows, and / filters them (Enter applies, Esc cancels)") {
  Child pacer({fixture("pacer"), "--rate", "200"}, true);
  auto elf = ElfFile::open(fixture("pacer"));
  REQUIRE(elf.has_value());
  std::string line;
  REQUIRE(pacer.readLine(line, 5000));
  // No pattern: the program's own functions (main.* and its module's).
  Pane pane(topCommand(pacer.pid(), ""));
  auto both = [&] {
    auto rows = rowsOf(pane.screen());
    auto n = namesOf(rows);
    return std::find(n.begin(), n.end(), "main.scale") != n.end() && std::find(n.begin(), n.end(), "main.report") != n.end();
  };
  REQUIRE_MESSAGE(waitUntil(both, 40s), "main.scale and main.report not both on the screen:\n" << pane.screen());
  auto order = [&](const std::string& a, const std::string& b) {  // a above b on the screen
    auto n = namesOf(rowsOf(pane.screen()));
    auto ia = std::find(n.begin(), n.end(), a), ib = std::find(n.begin(), n.end(), b);
    return ia != n.end() && ib != n.end() && ia < ib;
  };
  // By calls/s (the default) main.scale (200/s) is above main.report (1/s)...
  CHECK(waitUntil([&] { return order("main.scale", "main.report"); }, 5s));
  // ... by name, below it.
  pane.keys("n");
  CHECK_MESSAGE(waitUntil([&] { return order("main.report", "main.scale"); }, 5s), pane.screen());
  CHECK(pane.screen().find("[FUNCTION]") != std::string::npos);
  pane.keys("c");
  CHECK_MESSAGE(waitUntil([&] { return order("main.scale", "main.report"); }, 5s), pane.screen());

  // `/sca` Enter: main.report is hidden.
  pane.keys("/ s c a Enter");
  auto onlyScale = [&] {
    auto n = namesOf(rowsOf(pane.screen()));
    return n == std::vector<std::string>{"main.scale"};
  };
  CHECK_MESSAGE(waitUntil(onlyScale, 5s), pane.screen());
  CHECK(pane.screen().find("filter: sca") != std::string::npos);
  // `/rep` then Esc: the filter stays as it was.
  pane.keys("/ BSpace BSpace BSpace r e p Escape");
  std::this_thread::sleep_for(1500ms);
  CHECK_MESSAGE(onlyScale(), pane.screen());
  // `/` emptied then Enter: every row again.
  pane.keys("/ BSpace BSpace BSpace Enter");
  CHECK_MESSAGE(waitUntil(both, 5s), pane.screen());
  checkQuitClean(pane, pacer, **elf);
}

TEST_CASE("top: without a terminal it refuses in one line, exit 2, and points to count -i 1") {
  Child pacer({fixture("pacer"), "--rate", "200"}, true);
  auto r = runCli("top -p " + std::to_string(pacer.pid()));  // stdout a pipe
  CHECK(r.exitCode == 2);
  CHECK(splitLines(r.err).size() == 1);
  CHECK(r.err.find("goscope count -i 1") != std::string::npos);
  CHECK(r.out.empty());
  CHECK(goscopesFor(pacer.pid()).empty());
}

TEST_CASE("top --batch: without a terminal, -n tables as text after each interval, then exit 0, detached") {
  Child pacer({fixture("pacer"), "--rate", "200"}, true);
  auto elf = ElfFile::open(fixture("pacer"));
  REQUIRE(elf.has_value());
  std::string line;
  REQUIRE(pacer.readLine(line, 5000));
  auto r = runCli("top --batch -n 3 -p " + std::to_string(pacer.pid()) + " main.scale");  // stdout a pipe
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  CHECK(r.exitCode == 0);
  // Three tables, each: the title, the header, main.scale's row, the cost line.
  std::vector<std::vector<std::string>> tables;
  for (const auto& l : splitLines(r.out)) {
    if (l.rfind("goscope top   PID " + std::to_string(pacer.pid()), 0) == 0) tables.emplace_back();
    if (!tables.empty() && !l.empty()) tables.back().push_back(l);
  }
  REQUIRE(tables.size() == 3);
  long long lastTotal = 0;
  for (const auto& t : tables) {
    std::string text;
    for (const auto& l : t) text += l + "\n";
    auto row = rowNamed(text, "main.scale");
    REQUIRE(row);
    CHECK(row->rate > 0);
    CHECK(row->total > lastTotal);  // since the attach: it grows
    lastTotal = row->total;
    auto cost = costShown(text);
    REQUIRE(cost);
    CHECK(cost->second > 0);
  }
  // The children's lines on stderr: the attach, and at the end the cost.
  CHECK(r.err.find("probes attached to PID " + std::to_string(pacer.pid())) != std::string::npos);
  CHECK(r.err.find("goscope: cost to the target: ") != std::string::npos);
  CHECK(waitUntil([&] { return goscopesFor(pacer.pid()).empty(); }, 15s));
  CHECK(textDifference(pacer.pid(), **elf) == 0);
  CHECK(pacer.alive());
  // -n belongs to --batch.
  auto n = runCli("top -n 2 -p " + std::to_string(pacer.pid()));
  CHECK(n.exitCode == 2);
  CHECK(n.err.find("--batch") != std::string::npos);
}

// top's own process among the goscope processes naming the PID (the others
// are its children, count and latency); 0 when none.
pid_t topProcessFor(pid_t target) {
  for (pid_t p : goscopesFor(target)) {
    const auto argv = cmdlineOf(p);
    if (argv.size() > 1 && argv[1] == "top") return p;
  }
  return 0;
}

TEST_CASE("top: SIGTERM, and its pane killed (SIGHUP): it exits, its children detach, the target is unharmed") {
  for (const int sig : {SIGTERM, SIGHUP}) {
    CAPTURE(sig);
    Child pacer({fixture("pacer"), "--rate", "200"}, true);
    auto elf = ElfFile::open(fixture("pacer"));
    REQUIRE(elf.has_value());
    std::string line;
    REQUIRE(pacer.readLine(line, 5000));
    // With -L: two children, each with probes on the target.
    Pane pane(topCommand(pacer.pid(), "-L main.scale"));
    REQUIRE_MESSAGE(waitUntil([&] { auto r = rowNamed(pane.screen(), "main.scale"); return r && r->rate > 0; }, 40s),
                    "no main.scale row with a rate on the screen:\n" << pane.screen());
    const pid_t top = topProcessFor(pacer.pid());
    REQUIRE(top > 0);
    if (sig == SIGTERM) ::kill(top, SIGTERM);
    else pane.kill();
    // top interrupts its children and waits for each to detach, killing one
    // that takes longer than its 30 s grace (docs/commands/top.md): gone
    // within that, whatever the load.
    CHECK_MESSAGE(waitUntil([&] { return !alive(top); }, 70s), "goscope top is still running");
    if (sig == SIGTERM) {
      CHECK(waitUntil([&] { return pane.exitCode() >= 0; }, 5s));
      CHECK(pane.exitCode() == 0);
      // The children's cost lines, printed once they had detached.
      CHECK_MESSAGE(pane.errors().find("goscope: count: cost to the target: ") != std::string::npos, pane.errors());
      CHECK_MESSAGE(pane.errors().find("goscope: latency: cost to the target: ") != std::string::npos, pane.errors());
    }
    CHECK_MESSAGE(waitUntil([&] { return goscopesFor(pacer.pid()).empty(); }, 15s), "a goscope process naming the PID is left");
    CHECK(textDifference(pacer.pid(), **elf) == 0);
    CHECK(pacer.alive());
    for (int i = 0; i < 50 && pacer.readLine(line, 10);) i++;  // what queued meanwhile
    CHECK(pacer.readLine(line, 3000));
    CHECK(line.rfind("pacer: ", 0) == 0);
  }
}

TEST_CASE("top: a child that fails ends top with its one-line error and its exit code") {
  Child pacer({fixture("pacer"), "--rate", "200"}, true);
  std::string line;
  REQUIRE(pacer.readLine(line, 5000));
  Pane pane(topCommand(pacer.pid(), "-L main.noSuchFunction"));
  REQUIRE_MESSAGE(waitUntil([&] { return pane.exitCode() >= 0; }, 40s), "goscope top did not exit:\n" << pane.screen());
  CHECK(pane.exitCode() == 5);  // count's and latency's: no match (docs/errors.md)
  const auto err = splitLines(pane.errors());
  REQUIRE(err.size() == 1);
  CHECK(err[0].find("main.noSuchFunction") != std::string::npos);
  CHECK(waitUntil([&] { return goscopesFor(pacer.pid()).empty(); }, 15s));
  CHECK(pacer.alive());
}

TEST_CASE("top: the budget's action on a hot probe shows in the status area, and the counter runs on unharmed") {
  Counter counter;
  const double before = counter.rate();
  // main.doWork runs millions of times a second: over a 1% budget its probe
  // is sampled or dropped, and count says so in an overhead_bound record.
  Pane pane(topCommand(counter.pid(), "--max-overhead 1 'main.*'"));
  CHECK_MESSAGE(waitUntil([&] { return pane.screen().find("budget: ") != std::string::npos; }, 40s),
                "no budget action on the screen:\n" << pane.screen());
  pane.keys("q");
  CHECK_MESSAGE(waitUntil([&] { return pane.exitCode() >= 0; }, 40s), "goscope top did not exit after q");
  CHECK(pane.exitCode() == 0);
  CHECK(waitUntil([&] { return goscopesFor(counter.pid()).empty(); }, 15s));
  counter.drainReports();
  checkUnharmed(counter, before);
}
