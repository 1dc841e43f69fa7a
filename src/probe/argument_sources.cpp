#include "probe/argument_sources.hpp"

#include "probe/method_signature.hpp"
#include "probe/type_shape.hpp"
#include "binary/arg_info.hpp"
#include "binary/arg_places.hpp"
#include "binary/go_binary.hpp"

namespace goscope {

const char* argumentsFromName(ArgumentsFrom from) {
  switch (from) {
    case ArgumentsFrom::Given: return "given";
    case ArgumentsFrom::Dwarf: return "dwarf";
    case ArgumentsFrom::Interface: return "interface";
    case ArgumentsFrom::Receiver: return "receiver";
    case ArgumentsFrom::Layout: return "layout";
    case ArgumentsFrom::None: return "none";
  }
  return "none";
}

FunctionArguments argumentsOf(const GoBinary& bin, const GoFunction& fn,
                              const std::map<std::string, std::string>& signatures, RuntimeTypeGraph& graph,
                              bool sourceOnly) {
  FunctionArguments a;
  if (auto it = signatures.find(fn.name); it != signatures.end()) {
    auto l = layoutFromSignature(it->second, namedTypeKindsIn(graph), lookupIn(graph));
    if (l) {
      a.from = ArgumentsFrom::Given;
      a.layout = std::move(*l);
    } else {
      a.problem = l.error().message;
    }
    return a;  // the user's word, or nothing: never a guess in its place
  }
  if (const DwarfInfo* d = bin.dwarf())
    if (const DwarfFunction* df = d->functionAt(fn.entry)) {
      if (sourceOnly) {
        a.from = ArgumentsFrom::Dwarf;
        return a;
      }
      auto l = layoutFunction(*d, *df, fn.args);
      if (l) {
        a.from = ArgumentsFrom::Dwarf;
        a.layout = std::move(*l);
        return a;
      }
      a.problem = l.error().message;
    }
  auto info = readArgInfo(bin, fn);
  const std::optional<std::vector<ArgInfoItem>> layout = info ? *info : std::nullopt;
  if (auto sig = inferMethodSignature(graph, fn.name, layout, a.inferenceRefused)) {
    a.from = ArgumentsFrom::Interface;
    a.inferred = std::move(sig->text);
    a.layout = std::move(sig->layout);
    return a;
  }
  if (layout) {
    a.from = ArgumentsFrom::Layout;
    a.traceback = placeWords(*layout, sourceOnly ? ArgPlaces{} : argPlaces(bin, fn, *layout));
    if (auto r = inferReceiver(graph, fn.name, *layout)) {
      a.from = ArgumentsFrom::Receiver;
      a.traceback->receiverWords = r->words;
      a.traceback->receiverType = r->type;
      a.layout.push_back(std::move(r->layout));
      a.layout.insert(a.layout.end(), a.traceback->words.begin() + static_cast<std::ptrdiff_t>(r->words),
                      a.traceback->words.end());
      return a;
    }
  } else if (info && takesNoArguments(bin, fn)) {
    // No layout and no argument frame: Go code that takes no arguments (not
    // the registers, which hold nothing of it).
    a.from = ArgumentsFrom::Layout;
    a.traceback = placeWords({}, ArgPlaces{ArgPlaces::From::IntegerOrder});
  }
  if (a.traceback) a.layout = a.traceback->words;
  return a;
}

std::string layoutText(const TracebackLayout& t) {
  if (t.receiverWords == 0 || t.args.empty()) return argInfoShape(t.args);
  const std::vector<ArgInfoItem> rest(t.args.begin() + 1, t.args.end());
  const std::string r = argInfoShape(rest);  // "(...)"
  return "(recv " + t.receiverType + (rest.empty() ? "" : ", " + r.substr(1, r.size() - 2)) + ")";
}

ArgumentSources argumentSources(const GoBinary& bin) {
  ArgumentSources s;
  RuntimeTypeGraph graph(bin);
  const std::map<std::string, std::string> none;
  for (const auto& fn : bin.pclntab().functions()) {
    s.functions++;
    const FunctionArguments a = argumentsOf(bin, fn, none, graph);
    switch (a.from) {
      case ArgumentsFrom::Given: break;
      case ArgumentsFrom::Dwarf: s.dwarf++; break;
      case ArgumentsFrom::Interface: s.method++; break;
      case ArgumentsFrom::Receiver: s.receiver++; break;
      case ArgumentsFrom::None: s.raw++; break;
      case ArgumentsFrom::Layout:
        if (a.traceback->args.empty()) {
          s.noArguments++;
          break;
        }
        s.layout++;
        bool placed = true;
        for (const auto& w : a.traceback->words) placed = placed && w.problem.empty();
        if (placed) s.placed++;
        break;
    }
  }
  return s;
}

}  // namespace goscope
