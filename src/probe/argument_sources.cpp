#include "probe/argument_sources.hpp"

#include "probe/method_signature.hpp"
#include "target/arg_info.hpp"
#include "target/arg_places.hpp"
#include "target/go_binary.hpp"
#include "target/runtime_type_graph.hpp"

namespace goscope {

ArgumentSources argumentSources(const GoBinary& bin) {
  ArgumentSources s;
  RuntimeTypeGraph graph(bin);
  const DwarfInfo* dwarf = bin.dwarf();
  for (const auto& fn : bin.pclntab().functions()) {
    s.functions++;
    if (dwarf && dwarf->functionAt(fn.entry)) {
      s.dwarf++;
      continue;
    }
    auto info = readArgInfo(bin, fn);
    std::string why;
    if (info && inferMethodSignature(graph, fn.name, *info, why)) {
      s.method++;
      continue;
    }
    if (!info || !*info) {
      if (takesNoArguments(bin, fn)) s.noArguments++;
      else s.raw++;
      continue;
    }
    s.layout++;
    if (argPlaces(bin, fn, **info).from != ArgPlaces::From::Unknown) s.placed++;
  }
  return s;
}

}  // namespace goscope
