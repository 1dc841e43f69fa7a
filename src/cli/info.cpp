// goscope info: what goscope knows about a Go binary or process, so a user can
// tell at once which paths will work (DWARF for Delve, pclntab for BPF).
#include <boost/json.hpp>
#include <iostream>

#include "cli/command.hpp"
#include "cli/strategy_options.hpp"
#include "cli/target_options.hpp"
#include "util/hex.hpp"

namespace goscope::cli {

namespace {
const std::vector<OptionSpec> kSpecs = {
    kBinaryOption, kPidOption, {"json", 0, false, "one JSON object"}, {"help", 'h', false, "this help"}};
}

int runInfo(const std::vector<std::string>& argv) {
  std::vector<OptionSpec> specs = kSpecs;
  specs.push_back({"explain", 0, false, "print the plan, and every reason behind it, on stderr"});
  auto args = orRaise(parseArgs("info", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope info (-b BINARY | -p PID) [--json]", specs);
    return 0;
  }
  Target t = openTargetOrRaise(args, "info");
  if (args.has("explain")) {
    ProbeRequest request;
    request.action = Action::Info;
    if (t.process) request.target.pid = t.process->pid();
    planOrRaise(args, request, *t.binary, request.target.pid);
  }
  const GoBinary& bin = *t.binary;
  const BuildInfo* bi = bin.buildInfo();
  const DwarfInfo* dw = bin.dwarf();

  boost::json::object o;
  if (t.process) {
    o["pid"] = t.process->pid();
    o["exe"] = t.process->exePath();
    o["load_bias"] = hex(t.loadBias);
  } else {
    o["exe"] = bin.name();
  }
  o["go_version"] = bi ? boost::json::value(bi->goVersion) : boost::json::value(nullptr);
  o["main_path"] = bi ? boost::json::value(bi->path) : boost::json::value(nullptr);
  o["main_module"] = bi && !bi->mainModule.empty() ? boost::json::value(bi->mainModule) : boost::json::value(nullptr);
  o["pie"] = bin.elf().isPie();
  o["symtab"] = bin.hasSymtab();
  o["dwarf"] = dw != nullptr;
  o["pclntab_format"] = std::string(bin.pclntab().goVersionFormat());
  o["functions"] = bin.pclntab().functions().size();
  std::optional<uint64_t> goid;
  if (dw) goid = dw->memberOffset("runtime.g", "goid");
  o["goid_offset"] = goid ? boost::json::value(*goid) : boost::json::value(nullptr);

  if (args.has("json")) {
    std::cout << boost::json::serialize(o) << '\n';
    return 0;
  }
  auto str = [&](const char* k) { return o[k].is_null() ? std::string("unknown") : boost::json::value_to<std::string>(o[k]); };
  if (t.process) std::cout << "pid:            " << t.process->pid() << '\n';
  std::cout << "executable:     " << str("exe") << '\n';
  std::cout << "go version:     " << str("go_version") << '\n';
  std::cout << "main package:   " << str("main_path") << '\n';
  std::cout << "pie:            " << (bin.elf().isPie() ? "yes" : "no") << '\n';
  if (t.process) std::cout << "load bias:      " << hex(t.loadBias) << '\n';
  std::cout << "symbols:        " << (bin.hasSymtab() ? ".symtab" : "stripped") << '\n';
  std::cout << "dwarf:          " << (dw ? "yes (signatures, types, Delve)" : "no (BPF path only)") << '\n';
  std::cout << "pclntab:        Go " << bin.pclntab().goVersionFormat() << " format, "
            << bin.pclntab().functions().size() << " functions\n";
  if (goid) std::cout << "runtime.g.goid: offset " << *goid << '\n';
  return 0;
}

}  // namespace goscope::cli
