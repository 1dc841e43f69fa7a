// goscope top: a full-screen view of the functions of a running program,
// refreshed each second: calls/s and totals, with -L p50/p99 latency
// (docs/commands/top.md). It draws what two of goscope's own subcommands
// print, run as its children (cli/goscope_child.hpp): `count --json -i 1`
// and, with -L, `latency --json -i 1`, so the plan, the overhead budget and
// the detach are exactly the command line's. It only reads. With --batch
// it prints the table as text after each interval instead, for a pipe or a
// file, as procps top -b does.
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/args.hpp"
#include "cli/command.hpp"
#include "cli/goscope_child.hpp"
#include "output/output.hpp"
#include "output/stdout_writer.hpp"
#include "cli/top_model.hpp"
#include "cli/top_screen.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t stopRequested = 0;
void onStop(int) { stopRequested = 1; }

const std::vector<OptionSpec> kSpecs = {
    {"pid", 'p', true, "the process to watch"},
    {"latency", 'L', false, "also p50 and p99 latency per function (a second child: goscope latency)"},
    {"max-overhead", 0, true, "the share of the target's time the probes may take, in % (count's and latency's default 1), enforced"},
    {"batch", 0, false, "no screen: print the table as text after each interval, then exit (procps top -b)"},
    {"iterations", 'n', true, "with --batch: how many tables before it exits (default 1)"},
    {"help", 'h', false, "this help"},
};

// One child and what it said: the newest `goscope: ...` line of its stderr
// is its status (the attach, a budget action, at the end its cost).
struct Watched {
  std::string name;
  GoscopeChild child;
  std::string status;
  bool open = true;
  int code = -1;
};

void signals(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a signal ends the wait for a key at once
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

std::string lastGoscopeLine(const std::vector<std::string>& lines, const std::string& fallback) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (it->rfind("goscope", 0) == 0) return *it;
  return fallback;
}

// The program's own packages: main.*, and its module's path when the build
// names one (`goscope info --json`'s main_module), each with --ignore-missing.
std::vector<std::string> defaultPatterns(const std::string& pid, int& failedCode, std::string& failedLine) {
  auto info = orRaise(GoscopeChild::start({"info", "--json", "-p", pid}));
  std::vector<std::string> out, err;
  const auto deadline = Clock::now() + 60s;
  while (info.pump(200ms, out, err) && Clock::now() < deadline && !stopRequested) {
  }
  if (Clock::now() >= deadline || stopRequested) info.interrupt();
  const int code = info.wait();
  if (code != 0) {
    failedCode = code;
    failedLine = lastGoscopeLine(err, "goscope: top: `goscope info -p " + pid + "` failed");
    return {};
  }
  std::vector<std::string> patterns = {"main.*"};
  std::string text;
  for (const auto& l : out) text += l;
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (!ec && v.is_object()) {
    auto it = v.as_object().find("main_module");
    if (it != v.as_object().end() && it->value().is_string() && !it->value().as_string().empty())
      patterns.push_back(std::string(it->value().as_string()) + "/*");
  }
  return patterns;
}

std::string commOf(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/comm");
  std::string s;
  std::getline(f, s);
  return s;
}


// Ends the children as Ctrl-C ends the command line (they detach and print
// their cost), each given a grace before it is killed; `line` gets each
// `goscope:` line they print meanwhile. Their codes go to Watched::code.
template <typename OnLine>
void endChildren(std::vector<Watched>& kids, OnLine line) {
  for (auto& k : kids)
    if (k.open) k.child.interrupt();
  for (auto& k : kids) {
    const auto deadline = Clock::now() + 30s;
    while (k.open && Clock::now() < deadline) {
      std::vector<std::string> out, err;
      k.open = k.child.pump(200ms, out, err);
      for (const auto& l : err)
        if (l.rfind("goscope", 0) == 0) line(k, l);
    }
    // One that did not end within the grace is killed, as the destructor
    // would (its probes are taken off by the kernel and the link holder).
    if (k.open) k.child.kill();
    if (k.code < 0) k.code = k.child.wait();
  }
}

// A child's line on top's stderr: as it printed it, or with -L named
// ("goscope: count: ...").
void passOn(const std::vector<Watched>& kids, const Watched& k, const std::string& l) {
  if (kids.size() > 1 && l.rfind("goscope: ", 0) == 0)
    output::toStderr("goscope: %s: %s\n", k.name.c_str(), l.substr(9).c_str());
  else
    output::lineToStderr(l);
}

// --batch: no terminal. The children's `goscope:` lines go to stderr as they
// come; after each interval (the k-th table once every child has ended its
// k-th), the table goes to stdout as text, then the cost line. After
// `iterations` tables, a stop signal or a closed stdout, the children are
// ended as on `q`; a child that ends by itself ends top with its code.
int runBatch(std::vector<Watched>& kids, top::Model& model, const top::View& view, long iterations) {
  std::vector<long> ends(kids.size(), 0);
  long printed = 0;
  Watched* failed = nullptr;
  auto& stdoutWriter = output::StdoutWriter::instance();
  auto out = output::makeOutput(false);
  while (!stopRequested && !failed && printed < iterations && !stdoutWriter.closed()) {
    for (size_t i = 0; i < kids.size() && !failed; i++) {
      auto& k = kids[i];
      std::vector<std::string> out, err;
      k.open = k.child.pump(kids.size() > 1 ? 50ms : 100ms, out, err);
      for (const auto& l : out) {
        const auto r = k.name == "count" ? model.feedCount(l) : model.feedLatency(l);
        if (r == top::Record::IntervalEnd) ends[i]++;
      }
      for (const auto& l : err)
        if (l.rfind("goscope", 0) == 0) passOn(kids, k, l);
      if (!k.open) {
        k.code = k.child.wait();
        failed = &k;  // it ended by itself: the target exited, or it failed
      }
    }
    const long ready = *std::min_element(ends.begin(), ends.end());
    for (; printed < ready && printed < iterations; printed++) {
      std::vector<std::string> lines{view.title, top::headerText(model.sortedBy(), view.latency)};
      const auto rows = model.visible();
      if (rows.empty()) lines.push_back("(no calls yet)");
      for (const auto& r : rows) lines.push_back(top::rowText(r, view.latency));
      if (auto cost = model.costLine(); !cost.empty()) lines.push_back(cost);
      out->screen(lines);
    }
  }
  endChildren(kids, [&](const Watched& k, const std::string& l) { passOn(kids, k, l); });
  return failed ? failed->code : 0;
}
}  // namespace

int runTop(const std::vector<std::string>& argv) {
  auto args = orRaise(parseArgs("top", kSpecs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope top -p PID [-L] [--max-overhead PCT] [PATTERN...]", kSpecs)
              << "\nA full-screen view, refreshed each second, of the functions matching PATTERN (by default\n"
                 "main.* and the main module's packages): calls/s, total, with -L p50/p99 latency.\n"
                 "Keys: c t n 5 9 sort, / filter, q quit. Without a terminal: --batch [-n N] prints the table\n"
                 "as text after each of N intervals (default 1), or goscope count -i 1 -p PID PATTERN...\n";
    return 0;
  }
  const auto pidArg = args.get("pid");
  if (!pidArg) raise({ErrorKind::Usage, "top: which process? -p PID", "goscope top --help"});
  const std::string pid = *pidArg;
  if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos || std::stol(pid) <= 0)
    raise({ErrorKind::Usage, "top: -p wants a process id, not '" + pid + "'"});
  const bool batch = args.has("batch");
  const long iterations = orRaise(args.getInt("iterations", 1, 1, 1000000));
  if (args.get("iterations") && !batch)
    raise({ErrorKind::Usage, "top: -n counts the tables of --batch", "goscope top --batch -n N -p PID"});
  if (!batch && (!::isatty(STDOUT_FILENO) || !::isatty(STDIN_FILENO)))
    raise({ErrorKind::Usage, "top: needs a terminal (stdin and stdout are not both one)",
           "goscope count -i 1 -p " + pid + " PATTERN... prints the same figures as lines"});
  const bool latency = args.has("latency");

  stopRequested = 0;
  signals(onStop);
  std::vector<std::string> patterns = args.positional();
  std::vector<std::string> extra;
  if (patterns.empty()) {
    int code = 0;
    std::string line;
    patterns = defaultPatterns(pid, code, line);
    if (stopRequested) return 0;  // Ctrl-C before the screen: nothing was attached
    if (code != 0) {
      output::lineToStderr(line);
      return code;
    }
    extra.push_back("--ignore-missing");  // a module path with no function of its own
  }

  // Never a plan that stops the program: a view refreshed each second
  // must not pause it (--no-stop refuses such a plan with the reason).
  std::vector<std::string> common = {"--json", "-i", "1", "-p", pid, "--no-stop"};
  if (auto pct = args.get("max-overhead")) {
    common.push_back("--max-overhead");
    common.push_back(*pct);
  }
  common.insert(common.end(), extra.begin(), extra.end());
  common.insert(common.end(), patterns.begin(), patterns.end());
  std::vector<Watched> kids;
  auto startChild = [&](const std::string& sub) {
    std::vector<std::string> a = {sub};
    a.insert(a.end(), common.begin(), common.end());
    kids.push_back(Watched{sub, orRaise(GoscopeChild::start(a)), "goscope: " + sub + ": attaching...", true, -1});
  };
  startChild("count");
  if (latency) startChild("latency");

  top::Model model;
  top::View view;
  view.latency = latency;
  std::string patternText;
  for (const auto& p : patterns) patternText += (patternText.empty() ? "" : " ") + p;
  view.title = "goscope top   PID " + pid + " (" + commOf(pid) + ")   " + patternText + "   every 1 s";
  if (batch) return runBatch(kids, model, view, iterations);
  auto screen = orRaise(top::Screen::open());

  Watched* failed = nullptr;
  while (!stopRequested && !failed) {
    for (auto& k : kids) {
      if (!k.open) continue;
      std::vector<std::string> out, err;
      k.open = k.child.pump(kids.size() > 1 ? 50ms : 100ms, out, err);
      for (const auto& l : out) k.name == "count" ? model.feedCount(l) : model.feedLatency(l);
      k.status = lastGoscopeLine(err, k.status);
      if (!k.open) {
        k.code = k.child.wait();
        failed = &k;  // it ended by itself: the target exited, or it failed
        break;
      }
    }
    bool quit = false;
    for (int key; !quit && (key = screen.key(0)) != -1;) {
      if (view.editing) {
        if (top::isEnter(key)) {
          model.setFilter(view.input);
          view.editing = false;
        } else if (top::isEscape(key)) {
          view.editing = false;
        } else if (top::isBackspace(key)) {
          if (!view.input.empty()) view.input.pop_back();
        } else if (key == top::kCtrlC) {
          quit = true;
        } else if (key >= 32 && key < 127) {
          view.input += static_cast<char>(key);
        }
        continue;
      }
      switch (key) {
        case 'q': case 'Q': case top::kCtrlC: quit = true; break;
        case 'c': model.sortBy(top::SortBy::Rate); break;
        case 't': model.sortBy(top::SortBy::Total); break;
        case 'n': model.sortBy(top::SortBy::Name); break;
        case '5': if (latency) model.sortBy(top::SortBy::P50); break;
        case '9': if (latency) model.sortBy(top::SortBy::P99); break;
        case '/': view.editing = true; view.input = model.filter(); break;
        default: break;
      }
    }
    if (quit) break;
    view.bottom.clear();
    std::string bound;
    if (!model.boundMessages().empty()) bound = model.boundMessages().back();
    if (!bound.empty()) view.bottom.push_back("budget: " + bound);
    for (const auto& k : kids)  // a child's stderr says its budget action too: once is enough
      if (bound.empty() || k.status != "goscope: " + bound)
        view.bottom.push_back((kids.size() > 1 ? k.name + ": " : "") + k.status);
    if (auto cost = model.costLine(); !cost.empty()) view.bottom.push_back(cost);
    screen.draw(model, view);
  }

  // Leave the screen before anything is printed, then end the children as
  // Ctrl-C ends the command line: they detach and print their cost.
  screen.close();
  std::vector<std::string> errs(kids.size());
  endChildren(kids, [&](const Watched& k, const std::string& l) { errs[static_cast<size_t>(&k - kids.data())] = l; });
  if (failed && failed->code != 0) {
    output::lineToStderr(failed->status);
    return failed->code;
  }
  for (size_t i = 0; i < kids.size(); i++) passOn(kids, kids[i], errs[i].empty() ? kids[i].status : errs[i]);
  return 0;
}

}  // namespace goscope::cli
