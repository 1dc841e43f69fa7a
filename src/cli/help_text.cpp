#include "cli/help_text.hpp"

#include <map>

namespace goscope::cli {

std::string valuePlaceholder(const std::string& name) {
  static const std::map<std::string, std::string> kinds = {
      {"pid", "PID"},         {"command", "'CMD ARGS'"},       {"binary", "BINARY"},      {"interval", "SECS"},
      {"duration", "SECS"},   {"timeout", "SECS"},             {"window", "SECS"},        {"max-string", "BYTES"},
      {"max-elements", "N"},  {"max-depth", "N"},
      {"count", "N"},         {"stack", "N"},                  {"repeat", "N"},           {"cond", "EXPR"},       {"filter", "EXPR"},
      {"read", "VAR"},        {"counter", "VAR"},              {"at", "FUNC"},            {"func", "FUNC"},
      {"strategy", "auto|delve|bpf"}, {"max-overhead", "PCT"}, {"expect-rate", "HITS/S"}, {"svg", "FILE"},
      {"dlv-arg", "ARG"},     {"dlv", "PATH"},     {"modes", "LIST"},               {"prometheus", "ADDR"},
      {"top", "N"},           {"debug-file", "PATH"},          {"debug-dir", "DIR"},
      {"max-duration", "SECS"}, {"max-events", "N"},           {"max-probes", "N"},       {"max-output", "BYTES"},
      {"max-calls", "N"},     {"iterations", "N"},
  };
  auto it = kinds.find(name);
  return it == kinds.end() ? "VALUE" : it->second;
}

std::string helpExamples(const std::string& sub) {
  // Commands a reader can run as they are on a Go program of their own
  // (PIDs and paths are placeholders); each says what it shows.
  static const std::map<std::string, std::string> examples = {
      {"list",
       "  goscope list -b ./server 'main.*'              functions of main, with their signatures\n"
       "  goscope list -p 1234 '/Handle$/' --json        one JSON object per matching function\n"},
      {"info",
       "  goscope info -b ./server                       Go version, DWARF, symbols, goroutine id offset\n"
       "  goscope info -p 1234 --json\n"},
      {"count",
       "  goscope count -p 1234 'main.*' -i 1 --top 10   each second, the 10 most called main functions\n"
       "  goscope count main.add -- ./prog --repeat 3    start ./prog, count until it exits (its exit status)\n"
       "  goscope count -p 1234 main.doWork --read main.counter -d 5 --json\n"
       "  goscope count -p 1234 main.handle --filter 'code >= 500'   only the calls whose argument matches\n"},
      {"latency",
       "  goscope latency -p 1234 'main.(*Server).Handle' -d 10   a log2 histogram and percentiles\n"
       "  goscope latency -p 1234 'main.(*Server).Handle' -i 5 -u   each 5 s, that interval's histogram in usecs\n"
       "  goscope latency -c './server -port 8080' 'net/http.(*conn).serve' --json\n"},
      {"trace",
       "  goscope trace -p 1234 main.add -n 10           the first 10 calls, arguments and results\n"
       "  goscope trace -b ./prog 'main.add(x int, y int) int' --json   a stripped binary, with a signature\n"
       "  goscope trace -p 1234 'main.*' -d 10 --folded --svg flame.svg   stack counts and a flame graph\n"
       "  goscope trace -p 1234 main.serve --filter 'path =~ \"/api*\" && n > 40'   tested in the kernel\n"},
      {"overhead",
       "  goscope overhead                               every way of probing, on goscope's own fixture\n"
       "  goscope overhead -p 1234 --func main.doWork --counter main.counter -w 2\n"},
      {"read",
       "  goscope read -p 1234 main.counter 'len(main.items)'\n"
       "  goscope read -p 1234 main.cfg --json\n"},
      {"sample",
       "  goscope sample -p 1234 --at main.handle main.queueLen -i 1 -d 10\n"
       "  goscope sample -p 1234 --at main.handle --args --json\n"},
      {"break",
       "  goscope break -p 1234 main.handle --args -n 3              three hits with their arguments\n"
       "  goscope break -p 1234 main.mayPanic --args --cond 'i == 7' --stack 5\n"
       "  goscope break -p 1234 main.doWork -n 100 --explain         which path serves it, and why\n"},
      {"set",
       "  goscope set -p 1234 main.cfg.SleepMs=0 --allow-write\n"},
      {"doctor",
       "  goscope doctor -p 1234                         compare the process's code with its file\n"
       "  goscope doctor -p 1234 --fix                   restore int3 bytes a dead debugger left\n"},
      {"calibrate",
       "  goscope calibrate                              measure what a probe hit costs on this host\n"
       "  goscope calibrate --json\n"},
      {"mcp",
       "  goscope mcp                                    tools for an agent on stdio, 1% budget, never stops\n"
       "  goscope mcp --pid 1234 --max-overhead 0.5      only PID 1234, half the budget\n"},
      {"top",
       "  goscope top -p 1234                            main's functions, calls/s and totals, live\n"
       "  goscope top -p 1234 -L 'net/http.*'            with p50/p99 latency\n"},
  };
  auto it = examples.find(sub);
  if (it == examples.end()) return "";
  return "examples:\n" + it->second + "-v (or --verbose) anywhere logs what goscope does on stderr\n";
}

}  // namespace goscope::cli
