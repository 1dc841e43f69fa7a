// The runtime's traceback layout (FUNCDATA_ArgInfo) read from real binaries
// and what goscope computes from types: the same grouping for every function
// DWARF describes, on the system's Go and on the newest release.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "probe/abi_layout.hpp"
#include "probe/method_signature.hpp"
#include "support/releases.hpp"
#include "support/run.hpp"
#include "target/arg_info.hpp"
#include "target/go_binary.hpp"

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
