// Interfaces in user signatures (issue #17, "Signatures on stripped
// binaries"): `any`, `error`, a named interface of the program (main.Shape)
// and the standard library's (fmt.Stringer, io.Writer) on the ifaces fixture,
// whose calls pass known dynamic types. The stripped build traced with
// signatures must name exactly the dynamic types the unstripped build names
// from DWARF; a named type the binary's runtime type data does not hold as an
// interface is refused. The named types are found by
// src/binary/runtime_types.cpp, checked here against DWARF on the fixtures
// and on the Go releases of $GOSCOPE_GO_SAMPLES.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "probe/type_names.hpp"
#include "support/go_samples.hpp"
#include "support/json_lines.hpp"
#include "support/run.hpp"
#include "binary/buildinfo.hpp"
#include "binary/go_binary.hpp"
#include "binary/runtime_type_graph.hpp"
#include "binary/runtime_types.hpp"

using namespace goscope;
using namespace goscope::test;

namespace {

const std::vector<std::string> kSignatures = {
    "main.inspect(v any) int",
    "main.check(err error) bool",
    "main.area(s main.Shape) int",
    "main.show(s fmt.Stringer) int",
    "main.emit(w io.Writer, n int) int",
};

// "main.area s" -> the dynamic types of s in call order ("nil" for a nil
// interface), and "main.area =" -> the first results.
std::map<std::string, std::vector<std::string>> seen(const std::string& out) {
  std::map<std::string, std::vector<std::string>> m;
  for (const auto& c : callObjects(out)) {
    const std::string fn(c.at("func").as_string());
    for (const auto& [name, v] : c.at("args").as_object()) {
      std::string what;
      if (v.is_null()) what = "nil";
      else if (v.is_object()) what = v.as_object().contains("type") && v.at("type").is_string()
                                         ? std::string(v.at("type").as_string())
                                         : "(no type)";
      else what = boost::json::serialize(v);
      m[fn + " " + std::string(name)].push_back(what);
    }
    m[fn + " ="].push_back(boost::json::serialize(c.at("results").as_array().at(0)));
  }
  return m;
}

std::string quotedSignatures() {
  std::string s;
  for (const auto& sig : kSignatures) s += " '" + sig + "'";
  return s;
}

}  // namespace

TEST_CASE("signatures: any, error and named interfaces print the dynamic types DWARF names") {
  // The unstripped build, typed by DWARF.
  auto dwarf = runCli("trace --json -c " + fixture("ifaces") + " main.inspect main.check main.area main.show main.emit");
  REQUIRE_MESSAGE(dwarf.exitCode == 0, dwarf.err);
  const auto want = seen(dwarf.out);
  // What the fixture passes (its comment lists it): DWARF agrees, so the
  // comparison below is between two right answers, not two empty ones.
  CHECK(want.at("main.inspect v") ==
        std::vector<std::string>{"int", "string", "*main.Circle", "main.Square", "[]int", "nil"});
  CHECK(want.at("main.check err") == std::vector<std::string>{"*errors.errorString", "*main.ShapeError", "nil"});
  CHECK(want.at("main.area s") == std::vector<std::string>{"main.Square", "*main.Circle"});
  CHECK(want.at("main.show s") == std::vector<std::string>{"main.Square", "time.Duration"});
  CHECK(want.at("main.emit w") == std::vector<std::string>{"*bytes.Buffer", "*strings.Builder"});
  CHECK(want.at("main.area =") == std::vector<std::string>{"9", "12"});
  CHECK(want.at("main.emit n") == std::vector<std::string>{"3", "5"});

  // Stripped (runtime type names) and PIE (a load bias; its DWARF agrees
  // with the signatures, so they are used) with the user's signatures.
  for (std::string v : {"stripped", "pie"}) {
    CAPTURE(v);
    auto r = runCli("trace --json -c " + fixture("ifaces", v) + quotedSignatures());
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    CHECK(r.err.find("warning") == std::string::npos);
    CHECK(seen(r.out) == want);
  }

  // The text line names the interface and its dynamic type, as for error.
  auto text = runCli("trace -c " + fixture("ifaces", "stripped") + " 'main.area(s main.Shape) int' 'main.emit(w io.Writer, n int) int'");
  REQUIRE_MESSAGE(text.exitCode == 0, text.err);
  CHECK(text.out.find(" main.area(s=main.Shape(main.Square)0x") != std::string::npos);
  CHECK(text.out.find(" main.area(s=main.Shape(*main.Circle)0xc") != std::string::npos);
  CHECK(text.out.find(" main.emit(w=io.Writer(*strings.Builder)0xc") != std::string::npos);
  CHECK(text.out.find(", n=5) = 5  [") != std::string::npos);
}

// A -c PIE that exits before goscope reads its maps leaves no load bias to
// look up: the session takes it from the first function entry's event and
// holds the events before it (the leaves main.inspect and main.check are
// probed at their call sites, whose events do not say which site). With only
// leaves traced there is no entry: the types stay unnamed, and the run says
// so, never a bare null type. Which case a run meets is the scheduler's: the
// runs are repeated, and every one must hold.
// A -c command is held in its exec stop while its memory map is read, so a
// program that exits at once still has its load address, even when only
// leaves (probed at their call sites, whose events do not carry it) run.
TEST_CASE("signatures: a short PIE's interface types are named, also when only leaves are traced") {
  const std::string leaves = " 'main.inspect(v any) int' 'main.check(err error) bool'";
  for (int run = 0; run < 6; run++) {
    CAPTURE(run);
    for (const std::string& sigs : {leaves, quotedSignatures()}) {
      auto r = runCli("trace --json -c " + fixture("ifaces", "pie") + sigs);
      REQUIRE_MESSAGE(r.exitCode == 0, r.err);
      CHECK_MESSAGE(r.err.find("events decoded without the program's load address") == std::string::npos, r.err);
      const auto got = seen(r.out);
      REQUIRE(got.count("main.inspect v"));
      CHECK(got.at("main.inspect v") == std::vector<std::string>{"int", "string", "*main.Circle", "main.Square", "[]int", "nil"});
      CHECK(got.at("main.check err") == std::vector<std::string>{"*errors.errorString", "*main.ShapeError", "nil"});
    }
  }
}

// Where ptrace is refused, the command runs unheld: the load address comes
// from the first entry event, events before it are held until then, and with
// no entry event at all they are decoded without it and that is said (a
// null type then carries type_unknown, never a bare null).
TEST_CASE("signatures: with ptrace refused, a short PIE's interface types are named, or their load address is said to be unknown") {
  // ptrace is refused indeed: a wrapper cannot be followed to its program.
  auto refused = runCliWithoutPtrace("count -d 1 -c \"sh -c '" + fixture("ifaces", "pie") + "'\" main.area");
  REQUIRE_MESSAGE(refused.err.find("ptrace: Operation not permitted") != std::string::npos, refused.err);
  CHECK(refused.exitCode == 7);  // docs/errors.md
  const std::string leaves = " 'main.inspect(v any) int' 'main.check(err error) bool'";
  size_t saidTimes = 0;
  for (int run = 0; run < 6; run++) {
    CAPTURE(run);
    for (const std::string& sigs : {leaves, quotedSignatures()}) {
      auto r = runCliWithoutPtrace("trace --json -c " + fixture("ifaces", "pie") + sigs);
      REQUIRE_MESSAGE(r.exitCode == 0, r.err);
      const bool said = r.err.find("events decoded without the program's load address") != std::string::npos;
      saidTimes += said;
      // With an entry among the functions (main.area...), the bias is always found.
      if (sigs != leaves) CHECK_MESSAGE(!said, r.err);
      const auto got = seen(r.out);
      REQUIRE(got.count("main.inspect v"));
      const auto& v = got.at("main.inspect v");
      if (!said) {
        CHECK(v == std::vector<std::string>{"int", "string", "*main.Circle", "main.Square", "[]int", "nil"});
        CHECK(got.at("main.check err") == std::vector<std::string>{"*errors.errorString", "*main.ShapeError", "nil"});
        continue;
      }
      for (const auto& c : callObjects(r.out))
        for (const auto& [name, a] : c.at("args").as_object())
          if (a.is_object() && a.at("type").is_null()) CHECK(a.as_object().contains("type_unknown"));
    }
  }
  MESSAGE("leaf-only runs that gave up the load address: " << saidTimes << " of 6");
}

TEST_CASE("signatures: a named struct is laid out from its runtime type record, a name the binary lacks is refused") {
  const std::string bin = fixture("ifaces", "stripped");
  // main.Square is a struct the program converts to an interface: its
  // record gives its fields (names, offsets, types), as DWARF would.
  auto r = runCli("trace -c " + bin + " 'main.side(sq main.Square) int'");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.out.find(" main.side(sq=main.Square{Side: 6}) = 6  [") != std::string::npos);
  // A name the binary does not have at all.
  auto none = runCli("trace -c " + bin + " 'main.area(s main.Shap) int'");
  CHECK(none.exitCode == 2);
  CHECK(none.out.empty());
  CHECK(none.err ==
        "goscope: signature `main.area(s main.Shap) int`: s: `main.Shap` is not a type in the binary's runtime type "
        "data (hint: write a named type as Go prints it (io.Writer, main.Point); the compiler keeps a record only of "
        "types converted to an interface, reflected on or reached from one: for another, give its underlying type, or "
        "a struct's fields as separate parameters)\n");
  // A struct the program never converts to an interface has no record.
  auto noRecord = runCli("trace -c '" + fixture("zoo", "stripped") + " --rounds 1' 'main.(*Server).Handle(s *main.Server, req main.Request) (main.Response, error)'");
  CHECK(noRecord.exitCode == 2);
  CHECK(noRecord.err.find("`main.Request` is not a type in the binary's runtime type data") != std::string::npos);
}

TEST_CASE("signatures: break takes interface signatures and refuses the same bad ones") {
  Child target({fixture("ifaces", "stripped"), "--loop"}, true);
  const std::string p = std::to_string(target.pid());
  auto r = runCli("break --json -p " + p + " 'main.area(s main.Shape) int' --args -n 2");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  const auto hits = callObjects(r.out);
  REQUIRE(hits.size() == 2);
  // Every round calls area(Square{3}) then area(&Circle{2}); -n 2 may start at either.
  std::vector<std::string> types;
  for (const auto& h : hits) types.emplace_back(h.at("args").at("s").at("type").as_string());
  CHECK(types[0] != types[1]);
  for (const auto& t : types) CHECK((t == "main.Square" || t == "*main.Circle"));
  auto bad = runCli("break -p " + p + " 'main.area(s main.Shap) int' --args -n 1");
  CHECK(bad.exitCode == 2);
  CHECK(bad.err.find("`main.Shap` is not a type in the binary's runtime type data") != std::string::npos);
  CHECK(target.alive());
}

TEST_CASE("runtime types: named types found by name agree with DWARF (ifaces, zoo)") {
  for (std::string name : {"ifaces", "zoo"})
    for (std::string variant : {"default", "pie", "nopt"}) {
      CAPTURE(name);
      CAPTURE(variant);
      auto bin = GoBinary::open(fixture(name, variant));
      REQUIRE(bin);
      const DwarfInfo* d = (*bin)->dwarf();
      REQUIRE(d);
      const uint64_t types = *(*bin)->pclntab().typesStart();
      int interfaces = 0, others = 0;
      RuntimeTypeGraph graph(**bin);
      for (const auto& [tname, t] : d->types()) {
        // Named types whose runtime name is DWARF's (no package path with a slash).
        if (!t.runtimeTypeOffset || tname.find('/') != std::string::npos || tname.find('.') == std::string::npos ||
            tname.find_first_of("*[]{} (") != std::string::npos || tname.starts_with("noalg.") ||
            tname.starts_with("go."))
          continue;
        auto found = runtimeTypesNamed(**bin, tname);
        CAPTURE(tname);
        REQUIRE(found.size() == 1);
        CHECK(found[0].addr == types + t.runtimeTypeOffset);
        CHECK(found[0].kind == t.kind);
        // The graph's index of the section gives the same answer.
        CHECK(graph.kindsNamed(tname) == std::vector<GoType::Kind>{t.kind});
        (t.kind == GoType::Kind::Interface ? interfaces : others)++;
      }
      MESSAGE(name << " " << variant << ": " << interfaces << " named interfaces and " << others
                   << " other named types found by name, each at DWARF's address with DWARF's kind");
      CHECK(interfaces >= 3);
      CHECK(others >= 10);
    }
  // Stripped: the same records without DWARF.
  auto stripped = GoBinary::open(fixture("ifaces", "stripped"));
  REQUIRE(stripped);
  for (std::string iface : {"main.Shape", "fmt.Stringer", "io.Writer", "error"}) {
    CAPTURE(iface);
    auto found = runtimeTypesNamed(**stripped, iface);
    REQUIRE(found.size() == 1);
    CHECK(found[0].kind == GoType::Kind::Interface);
  }
  CHECK(runtimeTypesNamed(**stripped, "main.Square").at(0).kind == GoType::Kind::Struct);
  CHECK(runtimeTypesNamed(**stripped, "main.Shap").empty());
  RuntimeTypeGraph strippedGraph(**stripped);
  CHECK(strippedGraph.kindsNamed("main.Square") == std::vector<GoType::Kind>{GoType::Kind::Struct});
  CHECK(strippedGraph.kindsNamed("io.Writer") == std::vector<GoType::Kind>{GoType::Kind::Interface});
  CHECK(strippedGraph.kindsNamed("main.Shap").empty());
  // A package path is cut to the package's name, as the runtime names it.
  CHECK(runtimeTypeName("net/http.ResponseWriter") == "http.ResponseWriter");
  CHECK(runtimeTypeName("main.Box[net/http.Header]") == "main.Box[net/http.Header]");
}

TEST_CASE("runtime type graph: every named struct's record gives DWARF's fields (ifaces, zoo)") {
  for (std::string name : {"ifaces", "zoo"})
    for (std::string variant : {"default", "pie"}) {
      CAPTURE(name);
      CAPTURE(variant);
      auto bin = GoBinary::open(fixture(name, variant));
      REQUIRE(bin);
      const DwarfInfo* d = (*bin)->dwarf();
      REQUIRE(d);
      RuntimeTypeGraph graph(**bin);
      int structs = 0;
      for (const auto& [tname, t] : d->types()) {
        if (t.kind != GoType::Kind::Struct || !t.runtimeTypeOffset || !tname.starts_with("main.") ||
            tname.find_first_of("*[]{} (") != std::string::npos)
          continue;
        CAPTURE(tname);
        const GoType* r = graph.find(tname);
        REQUIRE(r);
        CHECK(r->name == tname);
        CHECK(r->size == t.size);
        REQUIRE(r->fields.size() == t.fields.size());
        for (size_t i = 0; i < t.fields.size(); i++) {
          CHECK(r->fields[i].name == t.fields[i].name);
          CHECK(r->fields[i].offset == t.fields[i].offset);
          CHECK(r->fields[i].embedded == t.fields[i].embedded);
          // Field types by the runtime's name (a package's name, not its path).
          CHECK(r->fields[i].type == runtimeTypeName(t.fields[i].type));
        }
        structs++;
      }
      MESSAGE(name << " " << variant << ": " << structs << " named structs with a runtime record, each with DWARF's fields");
      CHECK(structs >= 3);
    }
}

TEST_CASE("runtime types: io.Writer is an interface and os.File a struct in every Go release (go samples)") {
  auto samples = goSamples();
  if (!samples) return;
  for (const auto& path : *samples) {
    CAPTURE(path.filename().string());
    auto bin = GoBinary::open(path.string());
    REQUIRE(bin);
    TypeNamer names = TypeNamer::forBinary(**bin);
    for (auto [name, kind] : {std::pair{std::string("io.Writer"), GoType::Kind::Interface},
                              std::pair{std::string("io.Reader"), GoType::Kind::Interface},
                              std::pair{std::string("os.File"), GoType::Kind::Struct}}) {
      CAPTURE(name);
      auto found = runtimeTypesNamed(**bin, name);
      REQUIRE(found.size() == 1);
      CHECK(found[0].kind == kind);
      // The record found is one the runtime names so (TypeNamer reads its str).
      CHECK(names.nameAt(found[0].addr).value_or("") == name);
    }
    // esbuild serves HTTP: the one interface a user names by its package path too.
    if (path.filename().string().starts_with("esbuild-")) {
      auto rw = runtimeTypesNamed(**bin, "net/http.ResponseWriter");
      REQUIRE(rw.size() == 1);
      CHECK(rw[0].kind == GoType::Kind::Interface);
      CHECK(names.nameAt(rw[0].addr).value_or("") == "http.ResponseWriter");
    }
    MESSAGE(path.filename().string() << " (" << (*bin)->buildInfo()->goVersion
                                     << "): io.Writer, io.Reader interfaces, os.File a struct");
  }
}
