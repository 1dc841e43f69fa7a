// goscope mcp driven by a real MCP client: the official TypeScript SDK
// (tests/mcp/sdk_client.mjs, installed by scripts/fetch-mcp-client.sh into
// $GOSCOPE_MCP_CLIENT), against real fixtures, and the protocol's edges
// spoken directly.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>
#include <thread>

#include "support/releases.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// Where the SDK client was installed; "" (skipped, failed under CI=true) when not.
std::string clientDir() {
  const char* d = std::getenv("GOSCOPE_MCP_CLIENT");
  if (!d || !std::filesystem::exists(std::string(d) + "/node_modules/@modelcontextprotocol/sdk")) {
    cannotRun("GOSCOPE_MCP_CLIENT unset or without the SDK: run scripts/fetch-mcp-client.sh DIR and set it to DIR");
    return {};
  }
  return d;
}

// Runs one scenario of the SDK client; its JSON report.
json::object runClient(const std::string& dir, const std::string& scenario, json::object config) {
  config["goscope"] = cliPath();
  char path[] = "/tmp/goscope-mcp-config-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::ofstream(path) << json::serialize(config);
  CommandResult r = run("node " + dir + "/sdk_client.mjs " + scenario + " @" + path);
  std::filesystem::remove(path);
  INFO("client stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto lines = splitLines(r.out);
  REQUIRE_FALSE(lines.empty());
  boost::system::error_code ec;
  json::value v = json::parse(lines.back(), ec);
  REQUIRE_MESSAGE(!ec, lines.back());
  return v.as_object();
}

json::object call(const char* name, json::object arguments) { return {{"name", name}, {"arguments", std::move(arguments)}}; }

// goscope processes (the server's subcommands) whose command line names `pid`.
std::vector<pid_t> goscopesOn(pid_t pid) {
  std::vector<pid_t> found;
  const std::string cli = std::filesystem::canonical(cliPath()).string();
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    auto exe = std::filesystem::read_symlink(e.path() / "exe", ec);
    if (ec || exe.string() != cli) continue;
    std::string cmdline = slurpFile(e.path().string() + "/cmdline");
    for (auto& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(" " + std::to_string(pid) + " ") != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

int64_t finalCount(const json::value& structured, const std::string& func) {
  for (const auto& r : structured.as_object().at("records").as_array())
    if (r.is_object() && r.as_object().contains("final") && r.as_object().at("func") == func.c_str())
      return r.as_object().at("count").to_number<int64_t>();
  return -1;
}

bool hasText(const json::value& v, const std::string& s) {
  return v.as_object().contains("text") && std::string(v.as_object().at("text").as_string()).find(s) != std::string::npos;
}

}  // namespace

TEST_CASE("mcp: the TypeScript SDK lists the tools and calls them, its count equals the CLI's, its read the memory's") {
  const std::string dir = clientDir();
  if (dir.empty()) return;
  Child pacer({fixture("pacer"), "--rate", "200", "--catch-up"}, true);
  std::string line;
  REQUIRE(pacer.readLine(line, 5000));
  Counter counter;
  const std::string pp = std::to_string(pacer.pid());
  json::array calls{
      call("count", {{"pid", pacer.pid()}, {"patterns", {"main.scale"}}, {"duration_s", 3}}),
      call("read", {{"pid", counter.pid()}, {"expressions", {"main.counter"}}}),
      call("list", {{"pid", pacer.pid()}, {"patterns", {"main.*"}}, {"max_results", 2}}),
      call("overhead_estimate", {{"pid", pacer.pid()}, {"patterns", {"main.scale"}}, {"calls_per_second", 200}}),
      call("set", {{"pid", counter.pid()}, {"assignments", {"main.counter=1"}}}),
      call("count", {{"pid", pacer.pid()}, {"patterns", {"main.scale"}}, {"duration_s", 1000}}),
  };
  const int64_t before = counter.value();
  auto out = runClient(dir, "session", {{"calls", calls}});
  const int64_t after = counter.value();
  // The CLI's count of the same function over the same time, right after.
  auto cli = runCli("count --json -d 3 -p " + pp + " main.scale");
  REQUIRE(cli.exitCode == 0);
  int64_t cliCount = -1;
  for (const auto& l : splitLines(cli.out)) {
    auto v = json::parse(l);
    if (v.as_object().contains("final")) cliCount = v.as_object().at("count").to_number<int64_t>();
  }

  INFO(json::serialize(out));
  CHECK(out.at("server").at("name") == "goscope");
  std::vector<std::string> tools;
  for (const auto& t : out.at("tools").as_array()) tools.emplace_back(t.as_string());
  CHECK(tools == std::vector<std::string>{"list", "info", "count", "latency", "trace", "read", "overhead_estimate"});
  const auto& r = out.at("calls").as_array();
  REQUIRE(r.size() == 6);
  // count: the record the CLI prints, within 5% of the CLI's own count;
  // progress reported through a call over a second.
  CHECK(r[0].at("isError") == false);
  const int64_t mcpCount = finalCount(r[0].at("structured"), "main.scale");
  MESSAGE("main.scale at 200 calls/s over 3 s: MCP count " << mcpCount << ", CLI count " << cliCount);
  CHECK(mcpCount > 0);
  CHECK(std::abs(mcpCount - cliCount) <= cliCount * 0.05);
  CHECK(r[0].at("progress").as_array().size() >= 2);
  CHECK(r[0].at("structured").at("command").as_string().find("--no-stop") != json::string::npos);
  // read: the counter's value at that moment, from its memory.
  CHECK(r[1].at("isError") == false);
  const auto& rec = r[1].at("structured").at("records").as_array();
  REQUIRE(rec.size() == 1);
  const int64_t read = std::stoll(std::string(rec[0].at("value").is_string() ? rec[0].at("value").as_string().c_str()
                                                                            : json::serialize(rec[0].at("value")).c_str()));
  CHECK(read >= before);
  CHECK(read <= after);
  // list: two rows, the rest counted.
  CHECK(r[2].at("structured").at("records").as_array().size() == 2);
  CHECK(r[2].at("structured").at("more").to_number<int64_t>() > 0);
  // overhead_estimate: priced from this host's figures, nothing attached.
  const auto& fn = r[3].at("structured").at("functions").as_array();
  REQUIRE(fn.size() == 1);
  CHECK(fn[0].at("per_hit_ns").to_number<int64_t>() > 0);
  CHECK(fn[0].at("share_pct").to_number<double>() > 0);
  CHECK(r[3].at("structured").at("within_budget").is_bool());
  // set without --allow-write: a tool error naming the flag.
  CHECK(r[4].at("isError") == true);
  CHECK(hasText(r[4], "--allow-write"));
  // A duration over the server's limit: refused with the limit, nothing run.
  CHECK(r[5].at("isError") == true);
  CHECK(hasText(r[5], "duration_s"));
  CHECK(pacer.alive());
  CHECK(textDifference(pacer.pid(), *ElfFile::open(fixture("pacer")).value()) == 0);
  CHECK(counter.value() > after);  // it runs on
}

TEST_CASE("mcp: a hot probe under the default budget is dropped, the result says so, the target recovers") {
  const std::string dir = clientDir();
  if (dir.empty()) return;
  Counter counter;
  auto out = runClient(dir, "session",
                       {{"calls", json::array{call("count", {{"pid", counter.pid()}, {"patterns", {"main.doWork"}}, {"duration_s", 3}})}}});
  INFO(json::serialize(out));
  const auto& r = out.at("calls").as_array().at(0);
  CHECK(r.at("isError") == false);
  const auto& actions = r.at("structured").at("budget_actions").as_array();
  REQUIRE_FALSE(actions.empty());
  CHECK(actions[0].at("action") == "dropped");
  CHECK(hasText(r, "dropped the probe on main.doWork"));
  CHECK(counter.codeIntact(counter.doWork));
  CHECK(textDifference(counter.pid(), *counter.elf) == 0);
  CHECK(counter.child.alive());
}

TEST_CASE("mcp: a cancelled trace ends its subcommand, and the server answers the next call") {
  const std::string dir = clientDir();
  if (dir.empty()) return;
  Child pacer({fixture("pacer"), "--rate", "200"}, true);
  std::string line;
  REQUIRE(pacer.readLine(line, 5000));
  auto out = runClient(
      dir, "cancel",
      {{"call", call("trace", {{"pid", pacer.pid()}, {"specs", {"main.scale"}}, {"max_events", 1000}, {"duration_s", 30}})},
       {"abortMs", 3000},
       {"after", call("list", {{"pid", pacer.pid()}, {"patterns", {"main.scale"}}})}});
  INFO(json::serialize(out));
  CHECK(out.at("cancelled").as_object().contains("thrown"));
  CHECK(out.at("cancelledAfterMs").to_number<int64_t>() < 10000);
  CHECK(out.at("after").at("isError") == false);
  CHECK(out.at("after").at("structured").at("records").as_array().size() == 1);
  // The trace's goscope is gone and left nothing in the target.
  CHECK(waitUntil([&] { return goscopesOn(pacer.pid()).empty(); }, 20s));
  CHECK(pacer.alive());
  CHECK(textDifference(pacer.pid(), *ElfFile::open(fixture("pacer")).value()) == 0);
}

TEST_CASE("mcp: a client that disconnects mid-call: the probes detach, the server exits, the target is unharmed") {
  const std::string dir = clientDir();
  if (dir.empty()) return;
  Counter counter;
  auto out = runClient(dir, "disconnect",
                       {{"call", call("count", {{"pid", counter.pid()}, {"patterns", {"main.*"}}, {"duration_s", 30}})},
                        {"closeMs", 4000}});
  INFO(json::serialize(out));
  const pid_t server = static_cast<pid_t>(out.at("serverPid").to_number<int64_t>());
  CHECK(waitUntil([&] { return !alive(server) && goscopesOn(counter.pid()).empty(); }, 20s));
  checkUnharmed(counter, 0);
}

TEST_CASE("mcp: the server SIGKILLed mid-count: its subcommand gets SIGINT from the kernel and detaches, the target is unharmed") {
  Counter counter;
  const double before = counter.rate();
  // The server, its stdin a pipe this test keeps open (a closed stdin ends
  // the session, which would interrupt the call the orderly way), its
  // stdout and stderr to /dev/null. --max-overhead 100: the probes stay on
  // until the server dies, not dropped by the budget first.
  int in[2];
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  const std::string cli = cliPath();
  const pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (::dup2(in[0], 0) < 0 || null < 0 || ::dup2(null, 1) < 0 || ::dup2(null, 2) < 0) ::_exit(127);
    ::execl(cli.c_str(), cli.c_str(), "mcp", "--max-overhead", "100", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in[0]);
  const std::string pid = std::to_string(counter.pid());
  const std::string requests =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"pid":)" + pid +
      R"(,"patterns":["main.*"],"duration_s":60}}})"
      "\n";
  REQUIRE(::write(in[1], requests.data(), requests.size()) == static_cast<ssize_t>(requests.size()));
  // The count's probes are in: the counter's code in memory differs from its file.
  CHECK_MESSAGE(waitUntil([&] { return textDifference(counter.pid(), *counter.elf) != 0; }, 40s),
                "the count's probes never went in");
  REQUIRE_FALSE(goscopesOn(counter.pid()).empty());
  ::kill(server, SIGKILL);
  REQUIRE(::waitpid(server, nullptr, 0) == server);
  ::close(in[1]);
  // Its subcommand got SIGINT as the server died (PR_SET_PDEATHSIG): it
  // detaches as on Ctrl-C, within the grace the disconnect test allows.
  CHECK_MESSAGE(waitUntil([&] { return goscopesOn(counter.pid()).empty(); }, 20s), "a goscope process naming the PID is left");
  checkUnharmed(counter, before);
}

TEST_CASE("mcp: the protocol's edges: versions, bad JSON, unknown methods and tools, notifications") {
  // Spoken directly: a client sends these lines and closes stdin; the
  // server answers each request, in order for these quick ones, then exits.
  const std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      "this is not json\n"
      R"({"jsonrpc":"2.0","id":2,"method":"resources/list"})"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nosuch","arguments":{}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":4,"method":"ping"})"
      "\n"
      R"({"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"1999-01-01"}})"
      "\n"
      R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"count","arguments":{"pid":1}}})"
      "\n";
  char path[] = "/tmp/goscope-mcp-input-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  ::close(fd);
  auto r = run(cliPath() + " mcp < " + path);
  std::filesystem::remove(path);
  INFO(r.out << r.err);
  CHECK(r.exitCode == 0);
  std::map<int64_t, json::object> byId;
  int parseErrors = 0;
  for (const auto& l : splitLines(r.out)) {
    auto v = json::parse(l).as_object();
    CHECK(v.at("jsonrpc") == "2.0");
    if (v.at("id").is_null()) {
      parseErrors += v.at("error").at("code") == -32700;
      continue;
    }
    byId[v.at("id").to_number<int64_t>()] = v;
  }
  CHECK(parseErrors == 1);
  REQUIRE(byId.size() == 6);
  CHECK(byId[1].at("result").at("protocolVersion") == "2025-06-18");
  CHECK(byId[1].at("result").at("capabilities").as_object().contains("tools"));
  CHECK(byId[2].at("error").at("code") == -32601);
  CHECK(byId[3].at("error").at("code") == -32602);
  CHECK(byId[4].at("result").as_object().empty());
  CHECK(byId[5].at("result").at("protocolVersion") == "2025-11-25");
  CHECK(byId[6].at("result").at("isError") == true);
}
