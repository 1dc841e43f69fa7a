// The table of every error a user can cause (docs/errors.md), row by row:
// each bad input gives exactly one line on stderr, `goscope: ...` naming the
// problem, the documented exit code, nothing on stdout, and leaves the target
// as it was. Rows are grouped by what they need (nothing, a live process,
// reduced privileges, a target that exits or execs); each group is one test
// case, named in the table's last column.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "support/goscope_process.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"
#include "process/ptrace_privileges.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

struct Row {
  std::string args;  // after `goscope `; {X} is replaced from the vars
  int code;
  std::string needle;  // a part of the one line
};

std::string expand(std::string s, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars)
    for (size_t at = s.find("{" + k + "}"); at != std::string::npos; at = s.find("{" + k + "}"))
      s.replace(at, k.size() + 2, v);
  return s;
}

void expectOneLine(const CommandResult& r, int code, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == code);
  CHECK(r.out.empty());
  auto lines = splitLines(r.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("goscope: ", 0) == 0);
  CHECK(lines[0].find(needle) != std::string::npos);
}

void checkRows(const std::vector<Row>& rows, const std::map<std::string, std::string>& vars, const std::string& prefix = "") {
  for (const auto& row : rows) {
    std::string cmd = prefix + cliPath() + " " + expand(row.args, vars);
    CAPTURE(cmd);
    expectOneLine(run("timeout 60 " + cmd), row.code, expand(row.needle, vars));
  }
}

bool isRoot() { return ::geteuid() == 0; }

// A process that has exited and not been reaped: our own child.
struct Zombie {
  pid_t pid = ::fork();
  Zombie() {
    if (pid == 0) ::_exit(0);
    for (int i = 0; i < 200 && procState(pid) != 'Z'; ++i) std::this_thread::sleep_for(5ms);
  }
  ~Zombie() { ::waitpid(pid, nullptr, 0); }
};

// A kernel thread (PF_KTHREAD in /proc/PID/stat's flags), or 0 when none is
// visible (a container with its own PID namespace).
pid_t someKernelThread() {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    auto rp = line.rfind(')');
    if (rp == std::string::npos) continue;
    std::istringstream f(line.substr(rp + 2));
    std::string tok;
    unsigned long flags = 0;
    for (int n = 3; n <= 9 && f >> tok; ++n)
      if (n == 9) flags = std::stoul(tok);
    if (flags & 0x00200000) return std::stoi(name);
  }
  return 0;
}

std::string pidOf(pid_t p) { return std::to_string(p); }

// TCP sockets of `pid` in /proc/net/tcp: state (0A listen, 01 established)
// and local port, matched through the inodes of its socket fds.
std::vector<std::pair<std::string, uint16_t>> tcpSocketsOf(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + pidOf(pid) + "/fd", ec)) {
    auto target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::pair<std::string, uint16_t>> out;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
    f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode;
    if (inodes.count(inode))
      out.push_back({st, static_cast<uint16_t>(std::stoul(local.substr(local.find(':') + 1), nullptr, 16))});
  }
  return out;
}

bool portListening(uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st;
    f >> sl >> local >> remote >> st;
    if (st == "0A" && std::stoul(local.substr(local.find(':') + 1), nullptr, 16) == port) return true;
  }
  return false;
}

// errno of a TCP connect to 127.0.0.1:port (0 when it connects).
int connectErrno(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int r = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  int e = r == 0 ? 0 : errno;
  ::close(fd);
  return e;
}

pid_t spawnCliTo(const std::vector<std::string>& args, const std::string& errPath) {
  int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_t p = spawnCli(args, out, err);
  ::close(out);
  ::close(err);
  REQUIRE(p > 0);
  return p;
}

// A running counter fixture, without waiting for its first report.
struct QuickCounter {
  Child child{{fixture("counter")}};
  QuickCounter() { std::this_thread::sleep_for(200ms); }
  pid_t pid() const { return child.pid(); }
};

}  // namespace

// ---- no process needed: arguments --------------------------------------------

TEST_CASE("error table: bad arguments, every subcommand") {
  const std::map<std::string, std::string> vars = {{"F", fixture("functions")}};
  std::vector<Row> rows = {
      {"frobnicate", 2, "unknown command 'frobnicate'"},
      {"count -p", 2, "count: --pid needs a value"},
      {"list -p 1 -p 2", 2, "list: --pid given twice"},
      {"count --json=1 -p 1 main.doWork", 2, "count: --json takes no value"},
      {"count -p abc main.doWork", 2, "-p wants a process ID, not 'abc'"},
      {"count -p 0 main.doWork", 2, "-p wants a process ID, not '0'"},
      {"read -p -5 main.counter", 2, "-p wants a process ID, not '-5'"},
      {"count -p 99999999999 main.doWork", 2, "-p wants a process ID"},
      {"count -p 1 main.doWork -i 0", 2, "--interval wants a positive number of seconds, not '0'"},
      {"latency -p 1 main.doWork -d -1", 2, "--duration wants a positive number of seconds, not '-1'"},
      {"trace -p 1 main.doWork -d nan", 2, "--duration wants a positive number of seconds, not 'nan'"},
      {"trace -p 1 main.doWork --max-string 1000", 2, "--max-string wants a whole number from 1 to 256"},
      {"trace -p 1 'main.*' --stack --folded", 2, "--stack and --folded do not go together"},
      {"trace -p 1 'main.*' --stack --svg /tmp/goscope-x.svg", 2, "trace: --stack and --svg do not go together"},
      {"trace -p 1 main.doWork --folded -n 3", 2, "trace: -n counts printed calls; --folded and --svg count stacks"},
      {"trace -p 1 main.doWork --svg /nonexistent/dir/x.svg", 2, "trace: cannot write the flame graph to /nonexistent/dir/x.svg"},
      {"trace -p 1 main.doWork -n 0", 2, "--count wants a whole number from 1 to 1000000000"},
      {"trace -p 1 main.doWork -i 1", 2, "trace: -i reports stack counts each interval, with --folded"},
      {"latency -p 1 main.doWork -m -u", 2, "latency: -m and -u do not go together"},
      {"count -p 1 main.doWork --top 0", 2, "--top wants a whole number from 1 to 1000000"},
      {"count main.doWork --", 2, "-- needs a command after it"},
      {"count -c {F} main.doWork -- {F}", 2, "give the command once: -c 'CMD ARGS' or -- CMD ARGS"},
      {"trace -p 1 'main.add(x int'", 2, "cannot read the signature"},
      {"trace -p 1 'main.add(x frob) int'", 2, "unsupported type `frob`"},
      {"count -p 1", 2, "count: name at least one function pattern"},
      {"latency -p 1", 2, "latency: name at least one function pattern"},
      {"count -p 1 '/(/'", 2, "bad regular expression /(/"},
      {"list -b {F} '/(/'", 2, "bad regular expression /(/"},
      {"count main.doWork", 2, "count: give exactly one target"},
      {"count -p 1 -b {F} main.doWork", 2, "count: give exactly one target"},
      {"count -c '' main.doWork", 2, "-c needs a command"},
      {"list", 2, "list: give exactly one target"},
      {"info -b {F} -p 1", 2, "info: give exactly one target"},
      {"overhead --modes none,warp", 2, "overhead: unknown mode 'warp'"},
      {"overhead -r 0", 2, "--repeat wants a whole number from 1 to 100"},
      {"overhead -w 0", 2, "--window wants a positive number of seconds"},
      {"overhead --func main.doWork", 2, "--func and --counter go with -p PID"},
      {"read main.counter", 2, "read: name the process: -p PID"},
      {"read -p 1", 2, "read: name at least one expression"},
      {"sample -p 1 --args", 2, "sample: --args are a call's: name the function with --at FUNC"},
      {"sample -p 1", 2, "sample: name at least one expression (e.g. main.counter), or --at FUNC"},
      {"sample -p 1 main.counter --timeout 1", 2, "sample: --timeout is how long to wait for FUNC's call: it goes with --at FUNC"},
      {"sample -p 1 --at main.doWork", 2, "sample: name at least one expression"},
      {"sample -p 1 --at main.doWork main.counter -i 0", 2, "--interval wants a positive number of seconds"},
      {"break -p 1", 2, "break: name a function"},
      {"break -p 1 main.doWork -n 0", 2, "--count wants a whole number from 1 to 1000000000"},
      {"break -p 1 main.doWork --stack 101", 2, "--stack wants a whole number from 1 to 100"},
      {"set -p 1 main.counter=5", 2, "refused without --allow-write"},
      {"set -p 1 --allow-write", 2, "set: name VAR=VALUE"},
      {"set -p 1 main.counter --allow-write", 2, "'main.counter' is not VAR=VALUE"},
      {"doctor", 2, "doctor: name the process: -p PID"},
      {"doctor -p 1 main.x", 2, "doctor: unexpected argument 'main.x' (hint: goscope doctor -p PID [--fix])"},
      {"doctor -p 4000000", 3, "no process with PID 4000000"},
  };
  for (const char* sub : {"list", "info", "count", "latency", "trace", "overhead", "read", "sample", "break", "set"})
    rows.push_back({std::string(sub) + " --frobnicate", 2, std::string(sub) + ": unknown option --frobnicate"});
  checkRows(rows, vars);

  auto bare = runCli("");  // no command: the usage, exit 2
  CHECK(bare.exitCode == 2);
  CHECK(bare.err.rfind("usage: goscope COMMAND", 0) == 0);
}

// ---- targets --------------------------------------------------------------------

TEST_CASE("error table: bad targets") {
  const std::string text = "/tmp/goscope-error-table-" + pidOf(::getpid()) + ".txt";
  std::ofstream(text) << "just text\n";
  Child sleeper({"/bin/sleep", "60"});
  Zombie zombie;
  REQUIRE(procState(zombie.pid) == 'Z');
  Child stripped({fixture("counter", "stripped")});
  std::this_thread::sleep_for(200ms);
  const std::string fifo = "/tmp/goscope-error-table-fifo-" + pidOf(::getpid());
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::map<std::string, std::string> vars = {{"TXT", text},
                                             {"FIFO", fifo},
                                             {"DEEP", std::string(20000, '(') + std::string(20000, ')')},
                                             {"F", fixture("functions")},
                                             {"SLEEP", pidOf(sleeper.pid())},
                                             {"ZOMBIE", pidOf(zombie.pid)},
                                             {"STRIPPED", pidOf(stripped.pid())},
                                             {"STRIPPEDBIN", fixture("counter", "stripped")}};
  std::vector<Row> rows = {
      {"list -b /nonexistent/prog", 3, "/nonexistent/prog: no such file"},
      {"count -b /nonexistent/prog main.doWork", 3, "/nonexistent/prog: no such file"},
      {"list -b /tmp", 4, "/tmp: not a regular file"},
      {"list -b {FIFO}", 4, "{FIFO}: not a regular file"},  // was: blocked in open() for ever
      {"count -b {FIFO} main.doWork -d 1", 4, "{FIFO}: not a regular file"},
      {"list -b {F} '/^(.*)*QQQ$/'", 5, "no probe-able function matches"},  // was: 100% CPU for ever (std::regex)
      {"list -b {F} '/{DEEP}QQQ/'", 2, "regular expression too complex"},  // 20,000 nested groups: no crash, no seconds of matching
      {"list -b {TXT}", 4, "not an ELF file"},
      {"info -b /bin/true", 4, "not a Go program"},
      {"count -c /nonexistent/prog main.doWork", 3, "/nonexistent/prog: no such program"},
      {"count -c {TXT} main.doWork", 4, "{TXT}: not executable"},
      {"count -c /tmp main.doWork", 4, "/tmp: not a regular file"},
      {"count -c /bin/true main.doWork", 4, "not a Go program"},
      {"count -p 4000000 main.doWork", 3, "no process with PID 4000000"},
      {"read -p 4000000 main.counter", 3, "no process with PID 4000000"},
      {"overhead -p 4000000", 3, "no process with PID 4000000"},
      {"list -p {SLEEP}", 4, "is not a Go program"},
      {"count -p {SLEEP} main.doWork", 4, "is not a Go program"},
      {"read -p {SLEEP} main.counter", 4, "is not a Go program"},
      {"count -p {ZOMBIE} main.doWork", 4, "has no executable (kernel thread or zombie)"},
      {"read -p {ZOMBIE} main.counter", 4, "has no executable (kernel thread or zombie)"},
      {"read -p {STRIPPED} main.counter", 4, "has no DWARF debug info (stripped)"},
      {"break --strategy delve -p {STRIPPED} main.doWork", 4, "has no DWARF debug info (stripped)"},
      {"count -p {STRIPPED} main.doWork --read main.counter -d 1", 4, "is stripped: no DWARF or symbol table"},
      {"count -b {STRIPPEDBIN} 'main.nope*' -d 1", 5, "no function matches 'main.nope*'"},
  };
  if (pid_t k = someKernelThread()) {
    vars["KTHREAD"] = pidOf(k);
    rows.push_back({"info -p {KTHREAD}", 4, "has no executable (kernel thread or zombie)"});
    rows.push_back({"sample -p {KTHREAD} --at main.doWork main.counter", 4, "has no executable"});
  } else {
    MESSAGE("no kernel thread visible (own PID namespace): that row is not checked here");
  }
  // A binary with more functions than trace prints lines for: the Go compiler.
  auto tooldir = run("go env GOTOOLDIR");
  if (tooldir.exitCode == 0 && !splitLines(tooldir.out).empty()) {
    vars["COMPILE"] = splitLines(tooldir.out)[0] + "/compile";
    rows.push_back({"trace -b {COMPILE} '*' -d 1", 2, "functions match; tracing prints a line per call"});
  }
  checkRows(rows, vars);
  CHECK(tracerPid(stripped.pid()) == 0);
  CHECK(stripped.alive());
  std::filesystem::remove(text);
  ::unlink(fifo.c_str());
}

TEST_CASE("error table: bad symbols, expressions and dlv options on a live counter") {
  QuickCounter c;
  const std::map<std::string, std::string> vars = {{"P", pidOf(c.pid())}};
  checkRows({
                {"count -p {P} main.nothing", 5, "no function matches 'main.nothing'"},
                {"count -p {P} main.doWork --read main.nosuch -d 1", 5, "no package variable main.nosuch"},
                // DWARF shows it does not exist: refused before Delve starts (issue #17)
                {"read -p {P} main.nosuch", 5, "read: no package variable main.nosuch in "},
                {"break -p {P} main.nosuch", 5, "location \"main.nosuch\" not found"},
                {"sample -p {P} --at main.nosuch main.counter", 5, "location \"main.nosuch\" not found"},
                {"break -p {P} main.doWork --cond 'main.counter +'", 2, "Delve cannot parse the expression"},
                {"read --strategy delve -p {P} main.counter --dlv-arg=--listen=0.0.0.0:4444", 2, "refusing dlv option --listen"},
                {"read --strategy delve -p {P} main.counter --dlv-arg=--only-same-user=false", 2, "refusing dlv option --only-same-user"},
                {"read --strategy delve -p {P} main.counter --dlv-arg=--accept-multiclient", 2, "refusing dlv option --accept-multiclient"},
                {"read --strategy delve -p {P} main.counter --dlv-arg=--log-dest=/tmp/goscope-dlv.log", 2, "refusing dlv option --log-dest"},
                {"read --strategy delve -p {P} main.counter --dlv-arg=--init=/tmp/goscope-dlv.init", 2, "refusing dlv option --init"},
                {"read --strategy delve -p {P} main.counter --dlv-arg=--frob", 2, "dlv refused an option given with --dlv-arg: Error: unknown flag: --frob"},
            },
            vars);
  // Errors of an expression come after the session: the line saying how long
  // the target was stopped comes first, the error is the last line.
  for (const Row& row : std::vector<Row>{
           {"read -p {P} 'main.counter +'", 2, "main.counter +: Delve cannot parse the expression"},
           {"set -p {P} main.nosuch=1 --allow-write", 5, "main.nosuch=1: Delve Eval"},
           {"set -p {P} main.counter=abc --allow-write", 5, "could not find symbol value for abc"},
           // Values Delve would convert silently are refused before anything is written.
           {"set -p {P} main.counter=99999999999999999999999 --allow-write", 2,
            "main.counter=99999999999999999999999: 99999999999999999999999 is out of range for int64 (-9223372036854775808 to 9223372036854775807); nothing was written"},
           {"set -p {P} 'main.counter=1<<70' --allow-write", 2, "'1<<70' is not an integer literal or a variable name"},
           // All or nothing: the second assignment's error keeps the first from being written.
           {"set -p {P} main.counter=77 main.counter=abc --allow-write", 5, "could not find symbol value for abc; nothing was written"},
           {"break -p {P} main.doWork main.nosuch -n 3", 5, "main.nosuch: Delve Eval"},
       }) {
    auto r = run("timeout 60 " + cliPath() + " " + expand(row.args, vars));
    CAPTURE(row.args);
    INFO("stderr: " << r.err);
    CHECK(r.exitCode == row.code);
    auto lines = splitLines(r.err);
    REQUIRE(!lines.empty());
    CHECK(lines.back().rfind("goscope: ", 0) == 0);
    CHECK(lines.back().find(row.needle) != std::string::npos);
    CHECK(lines.size() <= 5);  // session lines (breakpoint, hits, stopped time, its cost), then the error
  }
  CHECK(waitUntraced(c.pid(), 10s));
  CHECK(c.child.alive());
}

// ---- privileges -------------------------------------------------------------------

TEST_CASE("error table: missing privileges are named before any work") {
  // setpriv needs CAP_SETPCAP and CAP_SETUID itself (a restricted container may lack them).
  if (!isRoot() || run("setpriv --bounding-set=-sys_ptrace --reuid=65534 --regid=65534 --clear-groups -- true").exitCode != 0) {
    MESSAGE("needs root and a working setpriv (util-linux): skipped");
    return;
  }
  QuickCounter c;
  const std::string marker = "/tmp/goscope-error-table-ran-" + pidOf(::getpid());
  const std::map<std::string, std::string> vars = {{"P", pidOf(c.pid())}, {"MARKER", marker}};
  // Root without CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN (bounding set: exec keeps them out).
  checkRows({
                {"count -p {P} main.doWork -d 1", 6, "the BPF backend needs CAP_BPF and CAP_PERFMON"},
                {"latency -p {P} main.doWork -d 1", 6, "the BPF backend needs CAP_BPF and CAP_PERFMON"},
                {"trace -p {P} main.doWork -d 1", 6, "the BPF backend needs CAP_BPF and CAP_PERFMON"},
                {"count -c '/usr/bin/touch {MARKER}' main.doWork -d 1", 6, "the BPF backend needs CAP_BPF"},
                {"overhead --modes bpf-count -w 0.2 -r 1", 6, "the BPF backend needs CAP_BPF"},
            },
            vars, "setpriv --bounding-set=-bpf,-perfmon,-sys_admin -- ");
  CHECK_FALSE(std::filesystem::exists(marker));  // the -c command never ran
  // Root without CAP_SYS_PTRACE: the counter (root, all capabilities) is out of reach.
  checkRows({
                {"read -p {P} main.counter", 6, "read: goscope needs CAP_SYS_PTRACE to read the memory of PID {P}: it holds capabilities goscope does not have"},
                {"sample -p {P} --at main.doWork main.counter", 6, "Delve needs CAP_SYS_PTRACE"},
                {"break --strategy delve -p {P} main.doWork", 6, "Delve needs CAP_SYS_PTRACE"},
                {"set -p {P} main.counter=1 --allow-write", 6, "Delve needs CAP_SYS_PTRACE"},
                {"list -p {P}", 6, "that needs CAP_SYS_PTRACE or the target's own user"},
            },
            vars, "setpriv --bounding-set=-sys_ptrace -- ");
  // Another user, no capabilities at all.
  const std::string unreadable = marker + "-unreadable";
  std::filesystem::copy_file(fixture("hello"), unreadable, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::permissions(unreadable, std::filesystem::perms::none);
  checkRows({
                {"list -b " + unreadable, 6, unreadable + ": permission denied"},
                {"read -p {P} main.counter", 6, "it runs as uid 0, goscope as uid 65534"},
                {"count -p {P} main.doWork -d 1", 6, "this process has neither"},
            },
            vars, "setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- ");
  std::filesystem::remove(unreadable);
  CHECK(tracerPid(c.pid()) == 0);
  CHECK(c.child.alive());
}

// ---- the target changes under a session ---------------------------------------------

TEST_CASE("error table: the target exits during a BPF session") {
  // --strict: without it the exit is the session's normal end, exit 0 (test_session_end.cpp).
  for (const std::string sub : {"count", "latency", "trace"}) {
    Child c({fixture("counter"), "--duration", "1"});
    std::this_thread::sleep_for(200ms);
    auto r = runCli(sub + " -p " + pidOf(c.pid()) + " main.doWork -d 20 --strict");
    INFO(sub << " stderr: " << r.err);
    CHECK(r.exitCode == 8);  // after what was recorded, as on the Delve path
    // (On a loaded machine the start-up can outlast the target's second: the
    // exit then comes before the attach, and is said so.)
    const std::string last = splitLines(r.err).back();
    CHECK((last.find("exited during the session (hint: everything recorded before it exited") != std::string::npos ||
           last.find("exited before the probes were attached") != std::string::npos));
  }
}

TEST_CASE("error table: the target execs another program during a session") {
  const std::string execer = fixture("execer"), counter = fixture("counter");
  auto elf = ElfFile::open(counter);
  REQUIRE(elf.has_value());
  auto execerElf = ElfFile::open(execer);
  REQUIRE(execerElf.has_value());
  const uint64_t oldBreakpoint = symbolOf(**execerElf, "main.doWork").value;
  REQUIRE(oldBreakpoint != 0);
  auto newCodeAt = [&](pid_t p, uint64_t addr) {
    auto file = (*elf)->readVaddr(addr, 1);
    auto mem = readMem(p, addr, 1);
    bool same = file && mem.size() == 1 && mem[0] == (*file)[0];
    if (!same && file && mem.size() == 1)
      MESSAGE("the new program's byte at the old breakpoint (" << addr << ") is " << int(mem[0]) << ", its file's "
                                                                << int((*file)[0]) << ": Delve restored it before goscope saw the exec");
    return same;
  };

  SUBCASE("BPF: the session ends saying so") {
    for (const std::string sub : {"count", "trace"}) {
      Child e({execer, "--after-ms", "1000", counter});
      std::this_thread::sleep_for(200ms);
      auto r = runCli(sub + " -p " + pidOf(e.pid()) + " main.doWork -d 20");
      INFO(sub << " stderr: " << r.err);
      CHECK(r.exitCode == 8);
      // Before the attach when the start-up outlasts the target's second
      // (a loaded machine): then nothing is attached, to either program.
      const std::string last = splitLines(r.err).back();
      CHECK((last.find("replaced its program during the session (exec of " + counter +
                       "); the probes were in the old one") != std::string::npos ||
             last.find("replaced its program before the probes were attached (exec of " + counter) !=
                 std::string::npos));
      CHECK(e.alive());
    }
  }
  SUBCASE("Delve: exit 8, and the new program is left alone") {
    for (const std::string sub : {"break", "sample"}) {
      // The exec comes once the session has recorded (SIGUSR1), not after a
      // fixed delay: on a loaded machine dlv's attach outlasted 1.5 s, and
      // nothing was recorded before the exec.
      Child e({execer, "--on-usr1", counter});
      std::this_thread::sleep_for(200ms);
      std::vector<std::string> argv =
          sub == "break" ? std::vector<std::string>{"break", "--strategy", "delve", "-p", pidOf(e.pid()), "main.doWork", "-d", "30"}
                         : std::vector<std::string>{"sample", "-p", pidOf(e.pid()), "--at", "main.doWork", "main.calls", "-i", "0.3", "-d", "30"};
      CommandResult r;
      GoscopeProcess g(argv, [&](const std::string& l) { r.out += l + "\n"; });
      REQUIRE(waitUntil(
          [&] {
            g.pump();
            return !r.out.empty() || !g.running();
          },
          60s));
      ::kill(e.pid(), SIGUSR1);
      const int st = g.wait(60s);
      REQUIRE(st != -1);
      r.exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      r.err = g.err();
      INFO(sub << " stderr: " << r.err);
      CHECK(r.exitCode == 8);
      CHECK(splitLines(r.err).back().find("replaced its program during the session (exec of " + counter) !=
            std::string::npos);
      CHECK_FALSE(r.out.empty());  // what was recorded before the exec
      CHECK(waitUntraced(e.pid(), 10s));
      std::this_thread::sleep_for(200ms);
      CHECK(procState(e.pid()) != 'T');  // running, not left stopped
      CHECK(procState(e.pid()) != 't');
      // Delve's Detach wrote the old program's byte here every time; now only
      // Delve itself sometimes does, while it handles the exec's SIGTRAP,
      // before goscope can know (docs/security.md): reported, not asserted.
      (void)newCodeAt(e.pid(), oldBreakpoint);
    }
  }
  SUBCASE("Delve: goscope SIGKILLed after the exec: its guardian lets go the same way") {
    // The exec comes once the breakpoint is set (SIGUSR1), not after a fixed
    // delay: on a loaded machine dlv's attach outlasted a second, and the
    // exec came before the session (another case: the session then starts
    // on the new program, or fails on it).
    Child e({execer, "--on-usr1", counter});
    std::this_thread::sleep_for(200ms);
    const std::string errPath = "/tmp/goscope-error-table-exec-" + pidOf(::getpid());
    struct RemoveFile {
      std::string path;
      ~RemoveFile() { std::filesystem::remove(path); }
    } removeErr{errPath};
    // A condition that never holds: goscope waits in its continue and does
    // not notice the exec before it dies.
    pid_t g = spawnCliTo({"break", "-p", pidOf(e.pid()), "main.doWork", "--cond", "main.calls < 0", "-d", "30"}, errPath);
    REQUIRE(waitUntil([&] { return slurpFile(errPath).find("breakpoint at") != std::string::npos; }, 60s));
    ::kill(e.pid(), SIGUSR1);
    std::error_code ec;
    REQUIRE(waitUntil([&] { return std::filesystem::read_symlink("/proc/" + pidOf(e.pid()) + "/exe", ec) == counter; }, 10s));
    std::this_thread::sleep_for(300ms);
    ::kill(g, SIGKILL);
    ::waitpid(g, nullptr, 0);
    CHECK(waitUntraced(e.pid(), 20s));
    std::this_thread::sleep_for(200ms);
    CHECK(procState(e.pid()) != 'T');
    CHECK(procState(e.pid()) != 't');
    (void)newCodeAt(e.pid(), oldBreakpoint);  // reported, as above
    CHECK(e.alive());
  }
}

// The exec comes after goscope has analysed the target (dlv is started only
// then) and while dlv attaches: Delve would find the new program, and set the
// breakpoint by name in a program goscope never read (a session that exited
// 0 with the new program's calls), or write into it at the old program's
// addresses (CreateBreakpoint: input/output error). Refused, untouched.
TEST_CASE("error table: a target that execs while dlv attaches is let go untouched, and the session says so") {
  const std::string execer = fixture("execer"), counter = fixture("counter");
  auto elf = ElfFile::open(counter);
  REQUIRE(elf.has_value());
  int before = 0, during = 0;
  for (int round = 0; round < 6; round++) {
    CAPTURE(round);
    Child e({execer, "--on-usr1", counter});
    std::this_thread::sleep_for(200ms);
    CommandResult r;
    GoscopeProcess g({"break", "--strategy", "delve", "-p", pidOf(e.pid()), "main.doWork", "-d", "30"},
                     [&](const std::string& l) { r.out += l + "\n"; });
    // Every 2nd round a little later: dlv's attach half done.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (dlvAttachedTo(e.pid()).empty() && g.running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    REQUIRE(!dlvAttachedTo(e.pid()).empty());
    if (round % 2) std::this_thread::sleep_for(30ms);
    ::kill(e.pid(), SIGUSR1);
    const int st = g.wait(60s);
    REQUIRE(st != -1);
    r.exitCode = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.err = g.err();
    INFO("stderr: " << r.err);
    CHECK(r.exitCode == 8);
    const std::string last = splitLines(r.err).empty() ? "" : splitLines(r.err).back();
    if (last.find("replaced its program before the probes were attached (exec of " + counter) != std::string::npos) {
      before++;
      CHECK(r.out.empty());
    } else {
      CHECK(last.find("replaced its program during the session (exec of " + counter) != std::string::npos);
      during++;
    }
    std::error_code ec;
    REQUIRE(waitUntil([&] { return std::filesystem::read_symlink("/proc/" + pidOf(e.pid()) + "/exe", ec) == counter; }, 10s));
    CHECK(waitUntraced(e.pid(), 10s));
    std::this_thread::sleep_for(200ms);
    CHECK(e.alive());
    CHECK(procState(e.pid()) != 'T');
    CHECK(procState(e.pid()) != 't');
    CHECK_MESSAGE(textBytesDiffering(e.pid(), **elf) == 0, describeTextDifference(e.pid(), **elf));
  }
  MESSAGE("exec before dlv had attached: " << before << ", after: " << during);
}

// ---- two sessions on one process ---------------------------------------------------

TEST_CASE("error table: two BPF sessions on one process both count and a second Delve session is refused") {
  QuickCounter c;
  const std::string p = pidOf(c.pid());
  const std::string errPath = "/tmp/goscope-error-table-first-" + pidOf(::getpid());
  pid_t first = spawnCliTo({"break", "-p", p, "main.doWork", "--cond", "main.counter < 0", "-d", "20"}, errPath);
  REQUIRE(waitUntil([&] { return slurpFile(errPath).find("breakpoint at") != std::string::npos; }, 20s));
  auto dlvs = dlvAttachedTo(c.pid());
  REQUIRE(dlvs.size() == 1);
  const pid_t dlv = dlvs[0];
  // Who is who, for a failure below (it has failed now and then, with the
  // message naming another goscope PID than `first`: not yet understood).
  auto chain = [](pid_t p) {
    std::string out;
    for (int i = 0; i < 4 && p > 1; i++) {
      std::string stat = slurpFile("/proc/" + std::to_string(p) + "/stat");
      out += std::to_string(p) + "(" + processName(p) + ") <- ";
      const auto close = stat.rfind(')');
      if (close == std::string::npos) break;
      std::istringstream rest(stat.substr(close + 2));
      std::string state;
      rest >> state >> p;
    }
    return out;
  };
  INFO("first goscope " << first << ", dlv " << dlv << ", dlv's ancestry " << chain(dlv));

  // Delve: one tracer per process, named with its owner.
  for (const std::string& cmd :
       {"read --strategy delve -p " + p + " main.counter", "set -p " + p + " main.counter=1 --allow-write"})
    expectOneLine(runCli(cmd), 4, "is already traced by PID " + pidOf(dlv) + " (dlv, under goscope PID " + pidOf(first) + ")");
  // A plain variable needs no debugger: the direct read still serves it.
  auto direct = runCli("read -p " + p + " main.counter");
  CHECK(direct.exitCode == 0);
  CHECK(direct.out.rfind("main.counter = ", 0) == 0);

  // dlv's API port: closed to anyone else while goscope holds the session.
  auto socks = tcpSocketsOf(dlv);
  uint16_t port = 0;
  for (const auto& [state, localPort] : socks) {
    CHECK(state != "0A");  // no listening socket left
    if (state == "01") port = localPort;
  }
  REQUIRE(port != 0);
  CHECK(connectErrno(port) == ECONNREFUSED);

  // BPF: uprobes do not exclude each other (nor Delve): two counts at once.
  auto a = run("timeout 30 " + cliPath() + " count -p " + p + " main.doWork -d 1 & " + cliPath() + " count -p " + p +
               " main.doWork -d 1; wait");
  CHECK(a.exitCode == 0);
  size_t totals = 0;
  for (const auto& l : splitLines(a.out))
    if (l.rfind("main.doWork", 0) == 0) {
      ++totals;
      CHECK(std::stoll(l.substr(l.find_last_of(' ') + 1)) > 0);
    }
  CHECK(totals == 2);

  // goscope SIGKILLed: its dlv goes, and with it the port.
  ::kill(first, SIGKILL);
  ::waitpid(first, nullptr, 0);
  CHECK(waitUntraced(c.pid(), 30s));
  CHECK(waitGone(dlv, 10s));
  CHECK_FALSE(portListening(port));
  CHECK(connectErrno(port) == ECONNREFUSED);
  CHECK(c.child.alive());
  std::filesystem::remove(errPath);
}

// A breakpoint at a raw address writes an int3 there: inside an instruction
// it corrupted the target (issue #12 item 4). The disassembler refuses it
// before dlv starts; the first byte of an instruction is accepted.
TEST_CASE("error table: a Delve breakpoint inside an instruction is refused before dlv starts") {
  Counter c;
  double before = c.rate();
  char inside[32];
  std::snprintf(inside, sizeof inside, "*0x%llx", static_cast<unsigned long long>(c.doWork.value + 1));
  auto r = runCli("break -p " + pidOf(c.pid()) + " '" + inside + "' -n 1 -d 2");
  expectOneLine(r, 2, std::string("break: ") + inside + " is inside an instruction of main.doWork");
  CHECK(dlvAttachedTo(c.pid()).empty());
  char entry[32];
  std::snprintf(entry, sizeof entry, "*0x%llx", static_cast<unsigned long long>(c.doWork.value));
  auto ok = runCli("break -p " + pidOf(c.pid()) + " '" + entry + "' -n 1 -d 5");
  INFO(ok.err);
  CHECK(ok.exitCode == 0);
  CHECK(ok.out.find("main.doWork") != std::string::npos);
  checkUnharmed(c, before);
}

// ---- messages that used to mislead (issue #12) -------------------------------------

TEST_CASE("error table: messages that used to mislead say what happened") {
  SUBCASE("a thread id as -p names its process (was: No such process, exit 8)") {
    QuickCounter c;
    pid_t tid = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + pidOf(c.pid()) + "/task"))
      if (pid_t t = std::stoi(e.path().filename().string()); t != c.pid()) tid = t;
    REQUIRE(tid != 0);
    expectOneLine(runCli("count -p " + pidOf(tid) + " main.doWork -d 1"), 2,
                  pidOf(tid) + " is a thread of process " + pidOf(c.pid()) + ", not a process (hint: give the process: -p " +
                      pidOf(c.pid()) + ")");
    expectOneLine(runCli("read -p " + pidOf(tid) + " main.counter"), 2, "is a thread of process " + pidOf(c.pid()));
    CHECK(c.child.alive());
  }
  SUBCASE("an empty option value is a usage error (was: count --read '' exit 5)") {
    QuickCounter c;
    expectOneLine(runCli("count -p " + pidOf(c.pid()) + " main.doWork --read '' -d 1"), 2,
                  "count: --read needs a value, not an empty string");
  }
  SUBCASE("a damaged .gopclntab is called damaged (was: not a Go program)") {
    const std::string copy = "/tmp/goscope-error-table-damaged-" + pidOf(::getpid());
    std::filesystem::copy_file(fixture("hello"), copy, std::filesystem::copy_options::overwrite_existing);
    auto elf = ElfFile::open(copy);
    REQUIRE(elf.has_value());
    const auto* sec = (*elf)->section(".gopclntab");
    REQUIRE(sec);
    const uint64_t at = sec->offset;
    elf->reset();
    {
      std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(at));
      const char zeros[8] = {};
      f.write(zeros, sizeof zeros);
    }
    expectOneLine(runCli("info -b " + copy), 4,
                  copy + ": a damaged Go program: its .gopclntab section does not read as any Go release's function table");
    std::filesystem::remove(copy);
  }
  SUBCASE("a -c command that execs says what it exec'd (was: target exited, after the new program ended)") {
    for (const std::string sub : {"count", "trace"}) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = runCli(sub + " -c '" + fixture("execer") + " --after-ms 300 /bin/sleep 5' main.doWork -d 20");
      INFO(sub << " stderr: " << r.err);
      CHECK(r.exitCode == 8);
      const std::string last = splitLines(r.err).back();
      CHECK(last.find("replaced its program during the session (exec of ") != std::string::npos);
      CHECK(last.find("sleep); the probes were in the old one") != std::string::npos);
      CHECK(std::chrono::steady_clock::now() - t0 < 4s);  // at the exec, not when sleep ends
    }
  }
  SUBCASE("a condition that calls a function is an expression error (was: exit 7)") {
    QuickCounter c;
    auto r = run("timeout 60 " + cliPath() + " break -p " + pidOf(c.pid()) + " main.doWork --cond 'len(main.f()) > 0' -d 5");
    INFO("stderr: " << r.err);
    CHECK(r.exitCode == 2);
    CHECK(splitLines(r.err).back().find("Delve cannot evaluate the expression") != std::string::npos);
    CHECK(waitUntraced(c.pid(), 10s));
    CHECK(c.child.alive());
  }
  SUBCASE("a target killed while goscope attaches: exit 8, saying so (was: exit 3 or 7, /proc/N/exe or auxv)") {
    for (int delayMs : {30, 80, 150}) {
      Child z({fixture("zoo")});
      std::this_thread::sleep_for(200ms);
      std::thread killer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
        ::kill(z.pid(), SIGKILL);
      });
      auto r = runCli("count --strict -p " + pidOf(z.pid()) + " 'runtime.*' 'main.*' -d 5");
      killer.join();
      INFO(delayMs << " ms: " << r.err);
      const std::string last = splitLines(r.err).back();
      CHECK(last.find("PID " + pidOf(z.pid()) + " ") != std::string::npos);
      // Killed before goscope first looked (its start-up outlasted the delay
      // on a loaded machine): the zombie the test has not reaped yet, its
      // own documented row (bad targets, exit 4).
      // A zombie seen after goscope's first look is an exit during its work
      // (exit 8, the zombie named as the cause), not that row.
      if (last.find("has no executable (kernel thread or zombie)") != std::string::npos &&
          last.find("exited while goscope was working on it") == std::string::npos) {
        CHECK(r.exitCode == 4);
        continue;
      }
      CHECK(r.exitCode == 8);
      // Named by the phase it died in: start-up, the executable's read, the
      // attach or the session.
      CHECK((last.find("exited while goscope was working on it") != std::string::npos ||
             last.find("exited while goscope read its executable") != std::string::npos ||
             last.find("exited before the probes were attached") != std::string::npos ||
             last.find("exited during the session") != std::string::npos));
    }
  }
  SUBCASE("the loser of two Delve sessions started at once is told the target is busy (was: exit 6, run as root)") {
    QuickCounter c;
    int busy = 0;
    for (int round = 0; round < 3; round++) {
      const std::string err1 = "/tmp/goscope-error-table-race1-" + pidOf(::getpid());
      pid_t first = spawnCliTo({"read", "--strategy", "delve", "-p", pidOf(c.pid()), "main.counter"}, err1);
      auto second = runCli("read --strategy delve -p " + pidOf(c.pid()) + " main.counter");
      int st = 0;
      ::waitpid(first, &st, 0);
      const int codes[2] = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, second.exitCode};
      const std::string errs[2] = {slurpFile(err1), second.err};
      for (int i = 0; i < 2; i++) {
        INFO("round " << round << " session " << i << ": " << errs[i]);
        CHECK((codes[i] == 0 || codes[i] == 4));  // never 6: nothing was missing
        if (codes[i] == 4) {
          busy++;
          CHECK(errs[i].find("one debugger at a time") != std::string::npos);
        }
      }
      std::filesystem::remove(err1);
      CHECK(waitUntraced(c.pid(), 10s));
    }
    MESSAGE(busy << " of 6 sessions found the target busy");
    CHECK(c.child.alive());
  }
  SUBCASE("a process holding capabilities goscope lacks is named by them (was: needs CAP_SYS_PTRACE, which it had)") {
    // PID 1 of this kind of VM holds CAP_SYS_RESOURCE, which the shells under
    // it lack; elsewhere there may be no such process.
    const std::string extra = capabilitiesBeyondOurs(1);
    if (extra.empty() || !selfHasCapability(kCapSysPtrace) || ::access("/proc/1/exe", F_OK) == 0) {
      MESSAGE("PID 1 holds no capability goscope lacks here (or is readable): not checked");
      return;
    }
    expectOneLine(runCli("info -p 1"), 6, "goscope has CAP_SYS_PTRACE, but PID 1 holds capabilities goscope lacks (" + extra + ")");
  }
}

// ---- the edges: special files, every address form, control characters --------

TEST_CASE("error table: special files for every path option, odd --prometheus addresses, control characters") {
  const std::string dir = "/tmp/goscope-error-edges-" + pidOf(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  const std::map<std::string, std::string> vars = {{"F", fixture("functions")}, {"D", dir}};
  QuickCounter counter;
  const std::string pid = pidOf(counter.pid());
  std::vector<Row> rows = {
      // -b: a FIFO (opened without waiting for a writer), a device, a directory.
      {"list -b {D}/fifo", 4, "{D}/fifo: not a regular file"},
      {"count -b /dev/zero main.add -d 1", 4, "/dev/zero: not a regular file"},
      {"info -b {D}", 4, "{D}: not a regular file"},
      // --debug-file: the same.
      {"info -b {F} --debug-file {D}/fifo", 4, "not a regular file"},
      {"info -b {F} --debug-file /dev/zero", 4, "not a regular file"},
      // --debug-dir: a directory, or nothing (was: taken silently).
      {"info -b {F} --debug-dir /dev/zero", 2, "--debug-dir /dev/zero is not a directory"},
      {"info -b {F} --debug-dir {D}/fifo", 2, "--debug-dir {D}/fifo is not a directory"},
      {"info -b {F} --debug-dir {D}/none", 3, "--debug-dir {D}/none: No such file or directory"},
      // --svg: never through a device, a FIFO or a symbolic link.
      {"trace -p " + pid + " main.doWork --svg /dev/null", 2, "/dev/null is a special file"},
      {"trace -p " + pid + " main.doWork --svg {D}/fifo", 2, "{D}/fifo is a special file"},
      {"trace -p " + pid + " main.doWork --svg {D}", 2, "is a directory, not a file"},
      // --prometheus: a link-local address without its interface (was: exit 1).
      {"count -p " + pid + " main.doWork --prometheus [fe80::1]:0", 3, "is a link-local address, which needs its interface"},
      {"count -p " + pid + " main.doWork --prometheus [::ffff:192.0.2.1]:0", 3, "--prometheus [::ffff:192.0.2.1]:0"},
  };
  checkRows(rows, vars);
  // A pattern with a newline and an ESC sequence: one line, escaped.
  auto r = run(cliPath() + " list -b " + fixture("functions") + " \"$(printf 'main.\\033[31mred\\nx')\"");
  INFO("stderr: " << r.err);
  CHECK(r.exitCode == 5);
  REQUIRE(splitLines(r.err).size() == 1);
  CHECK(r.err.find("main.\\x1b[31mred\\nx") != std::string::npos);
  CHECK(r.err.find('\x1b') == std::string::npos);
  std::filesystem::remove_all(dir);
}
