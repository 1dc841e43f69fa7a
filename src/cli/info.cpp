// goscope info: what goscope knows about a Go binary or process, so a user can
// tell at once which paths will work (DWARF for Delve, pclntab for BPF).
#include <iostream>

#include "probe/argument_sources.hpp"
#include "cli/command.hpp"
#include "cli/delve_options.hpp"
#include "cli/strategy_options.hpp"
#include "cli/target_options.hpp"
#include "output/output.hpp"
#include "binary/goid_offset.hpp"
#include "process/namespaces.hpp"

namespace goscope::cli {

namespace {
const std::vector<OptionSpec> kSpecs = {
    kBinaryOption, kPidOption, kDebugFileOption, kDebugDirOption, kDlvOption, {"json", 0, false, "one JSON object"}, {"help", 'h', false, "this help"}};
}

int runInfo(const std::vector<std::string>& argv) {
  std::vector<OptionSpec> specs = kSpecs;
  specs.push_back({"arguments", 0, false, "count where trace would type each function's arguments from (reads every function: slower)"});
  specs.push_back({"explain", 0, false, "say on stderr what info reads (it has no plan to choose), and the facts about the target"});
  auto args = orRaise(parseArgs("info", specs, argv));
  if (args.has("help")) {
    std::cout << usageOf("goscope info (-b BINARY | -p PID) [--arguments] [--json]", specs);
    return 0;
  }
  Target t = openTargetOrRaise(args, "info");
  if (args.has("explain")) {
    ProbeRequest request;
    request.action = Action::Info;
    if (t.process) request.target.pid = t.process->pid();
    explainWithoutPlan("info reads the executable (build info, pclntab, DWARF, runtime.newproc1's code) and, for -p, "
                       "the process's memory map, and asks `dlv version` of the dlvs it looks at: no probe is attached, no debugger, "
                       "the process is not stopped",
                       request, *t.binary, request.target.pid);
  }
  const GoBinary& bin = *t.binary;
  const BuildInfo* bi = bin.buildInfo();
  const DwarfInfo* dw = bin.dwarf();

  output::Output::TargetInfo info;
  if (t.process) {
    info.pid = t.process->pid();
    info.exe = t.process->exePath();
    info.loadBias = t.loadBias;
    info.namespaces = namespacesOf(t.process->pid(), t.process->exePath());
  } else {
    info.exe = bin.name();
  }
  if (bi) {
    info.goVersion = bi->goVersion;
    info.mainPath = bi->path;
    if (!bi->mainModule.empty()) info.mainModule = bi->mainModule;
  }
  info.pie = bin.elf().isPie();
  info.symtab = bin.hasSymtab();
  info.dwarf = dw != nullptr;
  info.debugInfoSource = debugInfoSourceName(bin.debugInfoOrigin().source);
  info.debugInfoPath = bin.debugInfoOrigin().path;
  info.pclntabFormat = bin.pclntab().goVersionFormat();
  info.functions = bin.pclntab().functions().size();
  // The offset the probes use, found or assumed: an assumed one is shown
  // too, as traces print the ids read at it.
  GoidOffsetInUse goid = goidOffsetInUse(bin);
  info.goidOffset = goid.offset;
  info.goidOffsetHow = goid.how;
  info.goidOffsetAssumed = goid.assumed;
  // Which dlv read, sample, break and set would run for it (a `dlv version`
  // at most per dlv looked at; none for a binary without DWARF).
  info.delve = api::chooseDelveFor(bin, args.get("dlv").value_or(""));
  if (args.has("arguments")) info.arguments = argumentSources(bin);
  if (const auto& cut = bin.truncation())
    info.truncated = output::Output::TargetInfo::Truncated{cut->file.size, cut->file.described, cut->file.missing,
                                                          cut->lost};
  auto out = output::makeOutput(args.has("json"));
  out->targetInfo(info);
  out->flush();
  return 0;
}

}  // namespace goscope::cli
