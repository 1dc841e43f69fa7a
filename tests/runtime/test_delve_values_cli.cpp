// break, sample and trace's Delve plan with the real dlv 1.20.2 on the
// nested fixture (fixtures/go/nested): an expression's value is labelled,
// in text and in --json keys, by the expression as typed (not Delve's
// "data.val"); a live value past Delve's load depth prints cut ({…}, JSON
// {"cut":true,...}), a real nil stays nil/null (docs/delve.md "Values Delve
// did not load"). Every test ends with the fixture alive, untraced, its
// .text equal to the file.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "support/unharmed.hpp"

using namespace goscope;
using namespace goscope::test;
using namespace std::chrono_literals;

namespace {

// The typed expression whose Delve name is "data.val": the request context's
// value, as in net/http (a cancelCtx around a valueCtx).
const std::string kVal = "r.Ctx.(*context.cancelCtx).Context.(*context.valueCtx).val";

struct Nested {
  Child child;
  std::shared_ptr<ElfFile> elf;
  Nested() : child({fixture("nested")}, /*captureStdout=*/true) {
    auto e = ElfFile::open(fixture("nested"));
    REQUIRE(e.has_value());
    elf = *e;
    std::string ready;
    REQUIRE(child.readLine(ready, 5000));
    REQUIRE(ready == "ready");
  }
  pid_t pid() const { return child.pid(); }
  std::string p() const { return " -p " + std::to_string(child.pid()) + " "; }
};

void checkNestedUnharmed(Nested& n) {
  REQUIRE(alive(n.pid()));
  CHECK_MESSAGE(waitUntraced(n.pid(), 20s), "a dlv is still attached to nested");
  CHECK(textDifference(n.pid(), *n.elf) == 0);
}

// r (a *main.Request) as JSON: its Peer's fields. Rwc is a live *main.Conn in
// an io.ReadWriter two levels down: cut. None and Closer are real nils.
void checkRequestJson(const boost::json::value& r) {
  const auto& req = r.at("value");
  CHECK(req.at("ID") == 42);
  const auto& peer = req.at("Peer").at("value");
  const auto& rwc = peer.at("Rwc");
  CHECK(rwc.at("type") == "*main.Conn");
  const auto& cut = rwc.at("value");
  REQUIRE(cut.is_object());  // not null: the connection is live
  CHECK(cut.at("cut") == true);
  CHECK(cut.at("type") == "*main.Conn");
  CHECK(cut.at("addr").as_string().starts_with("0xc"));
  CHECK(peer.at("Conn").at("value").at("cut") == true);  // the same *Conn, its struct past the depth
  CHECK(peer.at("None").is_null());
  CHECK(peer.at("Closer").is_null());
  // The context's valueCtx is past the depth as well: cut, not null.
  CHECK(req.at("Ctx").at("value").at("value").at("Context").at("value").at("cut") == true);
}

}  // namespace

TEST_CASE("delve values: break --json keys are the expressions as typed, cut values are not null") {
  Nested n;
  auto r = runCli("break --json" + n.p() + "main.handle r '" + kVal + "' r.Peer.Rwc r.Peer.None --args -n 2");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto hits = callObjects(r.out);
  REQUIRE(hits.size() == 2);
  for (const auto& h : hits) {
    const auto& values = h.at("values").as_object();
    CHECK(values.size() == 4);
    CHECK_FALSE(values.contains("data.val"));  // Delve's name for it
    REQUIRE(values.contains(kVal));
    CHECK(values.at(kVal).at("type") == "string");
    CHECK(values.at(kVal).at("value") == "alice");
    checkRequestJson(values.at("r"));
    // Loaded at the top, the live connection is whole.
    CHECK(values.at("r.Peer.Rwc").at("value").at("value").at("FD") == 7);
    CHECK(values.at("r.Peer.None").is_null());
    // Arguments keep their variable names.
    checkRequestJson(h.at("args").at("r"));
  }
  checkNestedUnharmed(n);
}

TEST_CASE("delve values: break text labels are the expressions as typed, cut values print {…}") {
  Nested n;
  auto r = runCli("break" + n.p() + "main.handle r '" + kVal + "' --args -n 1");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto lines = splitLines(r.out);
  REQUIRE(lines.size() == 1);
  const std::string& l = lines[0];
  INFO(l);
  CHECK(l.find(" main.handle(r=&main.Request{ID: 42, ") != std::string::npos);  // the argument by its name
  CHECK(l.find(" | r=&main.Request{ID: 42, ") != std::string::npos);
  CHECK(l.find(" " + kVal + "=interface {}(string)\"alice\"") != std::string::npos);
  CHECK(l.find("data.val") == std::string::npos);
  CHECK(l.find("Peer: &main.Peer{Rwc: io.ReadWriter(*main.Conn){…}, Conn: &main.Conn{…}, None: nil, Closer: nil}") !=
        std::string::npos);
  CHECK(l.find("Context: context.Context(*context.valueCtx){…}") != std::string::npos);
  CHECK(l.find("(*main.Conn)nil") == std::string::npos);
  checkNestedUnharmed(n);
}

TEST_CASE("delve values: sample labels its expressions as typed") {
  Nested n;
  auto r = runCli("sample --json" + n.p() + "--at main.handle '" + kVal + "' r.Peer -i 0.3 -d 0.5");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto recs = callObjects(r.out);
  REQUIRE(recs.size() == 2);  // at 0 and 0.3 s
  for (const auto& o : recs) {
    REQUIRE(o.at("miss") == false);
    const auto& values = o.at("values").as_object();
    CHECK(values.size() == 2);
    CHECK(values.at(kVal).at("value") == "alice");
    CHECK(values.at("r.Peer").at("value").at("None").is_null());
    CHECK(values.at("r.Peer").at("value").at("Rwc").at("value").at("value").at("Name") == "conn-7");
  }
  checkNestedUnharmed(n);
}

TEST_CASE("delve values: trace planned onto Delve prints cut arguments, not nil") {
  Nested n;
  auto r = runCli("trace --json --strategy delve --max-overhead 100" + n.p() + "main.handle -d 0.5");
  INFO("stderr: " << r.err);
  REQUIRE(r.exitCode == 0);
  auto calls = callObjects(r.out);
  REQUIRE(!calls.empty());  // ~100 calls/s for 0.5 s
  INFO(boost::json::serialize(calls[0]));
  for (const auto& c : calls) checkRequestJson(c.at("args").at("r"));
  checkNestedUnharmed(n);
}
