// The runtime's traceback layout (FUNCDATA_ArgInfo) read from real binaries
// and what goscope computes from types: the same grouping for every function
// DWARF describes, on the system's Go and on the newest release.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <map>
#include <string>

#include "probe/abi_layout.hpp"
#include "probe/method_signature.hpp"
#include "support/go_samples.hpp"
#include "support/releases.hpp"
#include "support/run.hpp"
#include "binary/arg_info.hpp"
#include "binary/go_binary.hpp"

using namespace goscope;
using namespace goscope::test;

TEST_CASE("arg info: the grouping goscope computes from DWARF's types is the runtime's, function by function") {
  std::vector<std::string> variants = {"default"};
  if (std::filesystem::exists(fixture("zoo", releaseVariant("go1.27", "default")))) variants.push_back(releaseVariant("go1.27", "default"));
  for (const auto& v : variants)
    for (std::string name : {"zoo", "ifaces", "allkinds"}) {
      if (!std::filesystem::exists(fixture(name, v))) continue;
      CAPTURE(v);
      CAPTURE(name);
      auto bin = GoBinary::open(fixture(name, v));
      REQUIRE(bin);
      const DwarfInfo* d = (*bin)->dwarf();
      REQUIRE(d);
      int same = 0, without = 0;
      for (const auto& fn : (*bin)->pclntab().functions()) {
        if (fn.name.find('[') != std::string::npos) continue;  // the dictionary is left out of the runtime's layout
        const DwarfFunction* df = d->functionAt(fn.entry);
        if (!df) continue;
        auto layout = layoutFunction(*d, *df, fn.args);
        if (!layout) continue;
        std::vector<ShapePtr> args;
        bool complete = true;
        for (const auto& p : *layout) {
          if (p.isResult) continue;
          // A receiver DWARF leaves unnamed is put back by goscope as `_`
          // (abi_layout.hpp), a guess at its place this test does not judge.
          complete = complete && p.shape && p.problem.empty() && p.name != "_";
          args.push_back(p.shape);
        }
        // Assembly: DWARF lists no parameters, the Go declaration has a layout.
        if (!complete || (args.empty() && df->params.empty())) continue;
        auto info = readArgInfo(**bin, fn);
        REQUIRE(info);
        if (!*info) {
          CHECK_MESSAGE(args.empty(), fn.name << " has arguments but no traceback layout");
          without++;
          continue;
        }
        CAPTURE(fn.name);
        CHECK(argInfoShape(argInfoFor(args)) == argInfoShape(**info));
        same++;
      }
      MESSAGE(name << " " << v << ": " << same << " functions grouped as the runtime groups them, " << without
                   << " without arguments");
      CHECK(same > 200);
    }
}

TEST_CASE("info --arguments: every function has one source, and stripping moves them from DWARF to the binary's own data") {
  auto plain = runCli("info --json --arguments -b " + fixture("zoo"));
  auto stripped = runCli("info --json --arguments -b " + fixture("zoo", "stripped"));
  REQUIRE_MESSAGE(plain.exitCode == 0, plain.err);
  REQUIRE_MESSAGE(stripped.exitCode == 0, stripped.err);
  auto p = boost::json::parse(plain.out).as_object(), s = boost::json::parse(stripped.out).as_object();
  auto n = [](const boost::json::object& o, const char* k) { return o.at("arguments").at(k).to_number<int64_t>(); };
  for (const auto* o : {&p, &s})
    CHECK(n(*o, "dwarf") + n(*o, "method_table") + n(*o, "receiver") + n(*o, "layout") + n(*o, "no_arguments") + n(*o, "raw") ==
          o->at("functions").to_number<int64_t>());
  CHECK(n(p, "dwarf") > 1000);
  CHECK(n(s, "dwarf") == 0);
  CHECK(n(s, "method_table") > 100);
  CHECK(n(p, "receiver") == 0);
  CHECK(n(s, "receiver") > 50);  // methods of described types the binary keeps no func type of
  CHECK(n(s, "layout") > 1000);
  CHECK(n(s, "layout_placed") <= n(s, "layout"));
  CHECK(n(s, "layout_placed") * 10 > n(s, "layout") * 8);  // most words are placed
  CHECK(n(s, "raw") * 10 < s.at("functions").to_number<int64_t>());
  CHECK_FALSE(boost::json::parse(runCli("info --json -b " + fixture("zoo", "stripped")).out).as_object().contains("arguments"));
}

TEST_CASE("info --arguments on real stripped programs: the npm samples (Go 1.16-1.27) and Debian's prometheus") {
  auto samples = goSamples();
  if (!samples) return;
  std::vector<std::string> bins;
  for (const auto& p : *samples) bins.push_back(p.string());
  // Debian's prometheus (Go 1.19, stripped), installed by scripts/setup.sh.
  if (std::filesystem::exists("/usr/bin/prometheus")) bins.push_back("/usr/bin/prometheus");
  else if (std::getenv("CI")) FAIL("/usr/bin/prometheus is missing (scripts/setup.sh installs it)");
  auto n = [](const boost::json::object& o, const char* k) { return o.at("arguments").at(k).to_number<int64_t>(); };
  for (const auto& b : bins) {
    CAPTURE(b);
    auto r = runCli("info --json --arguments -b " + b);
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    auto o = boost::json::parse(r.out).as_object();
    const std::string version(o.at("go_version").as_string());
    const int64_t functions = o.at("functions").to_number<int64_t>();
    CHECK(n(o, "dwarf") + n(o, "method_table") + n(o, "receiver") + n(o, "layout") + n(o, "no_arguments") + n(o, "raw") ==
          functions);
    MESSAGE(std::filesystem::path(b).filename().string()
            << " (" << version << "): " << functions << " functions, method table " << n(o, "method_table")
            << ", receiver " << n(o, "receiver") << ", layout " << n(o, "layout") << " (" << n(o, "layout_placed")
            << " placed), none " << n(o, "no_arguments") << ", raw " << n(o, "raw"));
    CHECK(n(o, "dwarf") == 0);  // all stripped
    if (version.starts_with("go1.16")) {
      // No FUNCDATA_ArgInfo before Go 1.17: a method table's types cannot
      // be checked against anything, and the stack ABI is refused: raw.
      CHECK(n(o, "raw") == functions);
      continue;
    }
    CHECK(n(o, "method_table") > 0);
    CHECK(n(o, "receiver") > 0);
    CHECK(n(o, "layout_placed") * 10 > n(o, "layout") * 9);  // nearly every layout fully placed
    CHECK(n(o, "raw") * 5 < functions);                       // assembly and what cannot be told from it
  }
}

TEST_CASE("list --json: where each function's types come from, and the layout of those typed by it") {
  auto s = runCli("list --json -b " + fixture("zoo", "stripped") +
                  " 'main.(*Circle).Area' main.checkRecord main.main 'main.(*Server).Handle' main.Point.Dist");
  REQUIRE_MESSAGE(s.exitCode == 0, s.err);
  std::map<std::string, boost::json::object> rows;
  for (const auto& line : splitLines(s.out))
    if (!line.empty()) {
      auto o = boost::json::parse(line).as_object();
      rows[std::string(o.at("func").as_string())] = o;
    }
  REQUIRE(rows.size() == 5);
  CHECK(rows["main.(*Circle).Area"].at("signature_from") == "interface");
  CHECK(rows["main.(*Circle).Area"].at("signature") == "main.(*Circle).Area(recv *main.Circle) float64");
  CHECK_FALSE(rows["main.(*Circle).Area"].contains("layout"));
  CHECK(rows["main.checkRecord"].at("signature_from") == "layout");
  CHECK(rows["main.checkRecord"].at("signature").is_null());
  CHECK(rows["main.checkRecord"].at("layout") == "({w, w, {w, w}})");
  CHECK(rows["main.main"].at("signature_from") == "layout");
  CHECK(rows["main.main"].at("layout") == "()");
  // Called directly (no func type kept), on a type the binary describes:
  // the receiver typed, the request by the layout. Point is not described.
  CHECK(rows["main.(*Server).Handle"].at("signature_from") == "receiver");
  CHECK(rows["main.(*Server).Handle"].at("signature").is_null());
  CHECK(rows["main.(*Server).Handle"].at("layout") == "(recv *main.Server, {{w, w}, w})");
  CHECK(rows["main.Point.Dist"].at("signature_from") == "layout");
  auto d = runCli("list --json -b " + fixture("zoo") + " main.checkRecord");
  REQUIRE_MESSAGE(d.exitCode == 0, d.err);
  auto o = boost::json::parse(d.out).as_object();
  CHECK(o.at("signature_from") == "dwarf");
  CHECK(o.at("signature") == "main.checkRecord(r main.Record) int64");
}

TEST_CASE("a signature on a Go 1.16 program is refused for its release, not for its frame size") {
  auto samples = goSamples();
  if (!samples) return;
  std::string go116;
  for (const auto& p : *samples)
    if (p.filename() == "esbuild-0.11.23") go116 = p.string();  // go1.16.3
  REQUIRE_MESSAGE(!go116.empty(), "esbuild-0.11.23 (Go 1.16) is among scripts/fetch-go-samples.sh's samples");
  auto r = runCli("trace -c '" + go116 + " --version' 'os.(*File).Write(f *os.File, b []byte) (int, error)'");
  CHECK(r.exitCode != 0);
  CHECK(r.err.find("passes arguments on the stack") != std::string::npos);
  CHECK(r.err.find("argument frame") == std::string::npos);
}
