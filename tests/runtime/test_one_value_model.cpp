// One value model, one renderer: the same calls captured by both paths print
// the same. break --args on zoo's main.(*Server).Handle (a pointer receiver
// and a struct argument with a string field), once by BPF entry probes and
// once by a Delve breakpoint, on one process: the arguments' text and JSON
// must agree field by field for every request both paths saw.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <map>
#include <regex>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope::test;

namespace {

const std::string kHandle = "'main.(*Server).Handle'";

// ID of the request -> the hit's "args" JSON.
std::map<int64_t, boost::json::object> argsById(const std::string& out) {
  std::map<int64_t, boost::json::object> byId;
  for (auto& hit : callObjects(out)) {
    const auto& args = hit.at("args").as_object();
    byId[args.at("req").as_object().at("ID").as_int64()] = args;
  }
  return byId;
}

// ID of the request -> the text between the function's parentheses.
std::map<int64_t, std::string> argsTextById(const std::string& out) {
  std::map<int64_t, std::string> byId;
  const std::regex call(R"(main\.\(\*Server\)\.Handle\((.*)\) funcs\.go:\d+)");
  const std::regex id(R"(ID: (\d+)\})");
  for (const auto& line : splitLines(out)) {
    std::smatch m, i;
    REQUIRE(std::regex_search(line, m, call));
    const std::string args = m[1];
    REQUIRE(std::regex_search(args, i, id));
    byId[std::stoll(i[1])] = args;
  }
  return byId;
}

}  // namespace

TEST_CASE("one value model: break --args prints the same arguments on the BPF and the Delve path") {
  Child zoo({fixture("zoo")});
  const std::string pid = std::to_string(zoo.pid());
  auto bpf = runCli("break --json --strategy bpf --args -n 4 -p " + pid + " " + kHandle);
  auto delve = runCli("break --json --strategy delve --args -n 4 -p " + pid + " " + kHandle);
  INFO("bpf: " << bpf.out << bpf.err << "\ndelve: " << delve.out << delve.err);
  REQUIRE(bpf.exitCode == 0);
  REQUIRE(delve.exitCode == 0);
  auto fromBpf = argsById(bpf.out), fromDelve = argsById(delve.out);
  int compared = 0;
  for (const auto& [id, args] : fromBpf) {
    auto other = fromDelve.find(id);
    if (other == fromDelve.end()) continue;
    // Field by field: the receiver is a followed pointer, the request a struct.
    const auto& s1 = args.at("s").as_object();
    const auto& s2 = other->second.at("s").as_object();
    // The *Server of the round each session caught: a round may allocate
    // anew between the two sessions, so its address is only well formed.
    CHECK(std::string(s1.at("addr").as_string()).starts_with("0xc"));
    CHECK(std::string(s2.at("addr").as_string()).starts_with("0xc"));
    CHECK(s1.at("value") == s2.at("value"));
    CHECK(args.at("req") == other->second.at("req"));
    CHECK(args.size() == other->second.size());
    compared++;
  }
  CHECK(compared > 0);  // zoo handles /users (ID 7) and /missing (ID 8) every round

  auto bpfText = runCli("break --strategy bpf --args -n 4 -p " + pid + " " + kHandle);
  auto delveText = runCli("break --strategy delve --args -n 4 -p " + pid + " " + kHandle);
  REQUIRE(bpfText.exitCode == 0);
  REQUIRE(delveText.exitCode == 0);
  auto t1 = argsTextById(bpfText.out), t2 = argsTextById(delveText.out);
  int comparedText = 0;
  for (const auto& [id, text] : t1) {
    if (!t2.count(id)) continue;
    CHECK(text == t2[id]);
    CHECK(text.starts_with("s=&main.Server{Name: \"api\", Port: 8080}, req=main.Request{Path: \""));
    comparedText++;
  }
  CHECK(comparedText > 0);
  CHECK(zoo.alive());
}
