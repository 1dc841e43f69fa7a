#include "backend/bpf/function_capture.hpp"

#include "target/arg_info.hpp"
#include "target/arg_places.hpp"

namespace goscope {

namespace {

// The traceback layout of a function without DWARF or signature, when the
// binary has one. A Go function with no layout and no argument frame takes
// no arguments: an empty layout (not the registers, which hold nothing of it).
std::optional<TracebackLayout> tracebackFor(const GoBinary& bin, const GoFunction& fn) {
  auto info = readArgInfo(bin, fn);
  if (!info) return std::nullopt;
  if (!*info) {
    if (takesNoArguments(bin, fn)) return placeWords({}, ArgPlaces{ArgPlaces::From::IntegerOrder});
    return std::nullopt;
  }
  auto places = argPlaces(bin, fn, **info);
  return placeWords(std::move(**info), places);
}

void group(const std::vector<ArgInfoItem>& items, const TracebackLayout& t, std::vector<Value>& words, size_t& next,
           std::vector<Value>& out, bool& more) {
  for (const auto& item : items) {
    switch (item.kind) {
      case ArgInfoItem::Kind::Word: {
        const size_t i = next++;
        if (i >= words.size() || i >= t.words.size()) {
          out.push_back(Value::missing("not decoded"));
        } else if (!t.words[i].problem.empty()) {
          out.push_back(Value::missing("unplaced"));
        } else {
          out.push_back(std::move(words[i]));
          out.back().name.clear();
          if (out.back().kind == Value::Kind::Uint) out.back().type = "uintptr";  // hex, as the traceback prints words
        }
        break;
      }
      case ArgInfoItem::Kind::Group: {
        Value g;
        g.kind = Value::Kind::Group;
        group(item.items, t, words, next, g.children, g.more);
        out.push_back(std::move(g));
        break;
      }
      case ArgInfoItem::Kind::More: more = true; break;
      case ArgInfoItem::Kind::Beyond: out.push_back(Value::missing("offset past the layout's encoding")); break;
    }
  }
}

}  // namespace

std::vector<Value> groupWords(const TracebackLayout& t, std::vector<Value>& words, bool& more) {
  std::vector<Value> out;
  size_t next = 0;
  more = false;
  group(t.args, t, words, next, out, more);
  return out;
}

FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts, RuntimeTypeGraph* graph) {
  FunctionTrace t;
  Result<std::vector<ValueLayout>> layout = fail(ErrorKind::NoMatch, "");
  if (auto it = signatures.find(fn.name); it != signatures.end()) {
    layout = layoutFromSignature(it->second, namedTypeKindsIn(bin), runtimeTypesIn(bin));
  } else if (const DwarfInfo* d = bin.dwarf()) {
    if (const DwarfFunction* df = d->functionAt(fn.entry)) layout = layoutFunction(*d, *df, fn.args);
  }
  if (!layout && !signatures.contains(fn.name) && graph) {
    auto info = readArgInfo(bin, fn);
    if (auto sig = inferMethodSignature(*graph, fn.name, info ? *info : std::nullopt, t.inferenceRefused)) {
      t.inferred = sig->text;
      layout = std::move(sig->layout);
    }
  }
  if (!layout && !signatures.contains(fn.name)) {
    if (auto tb = tracebackFor(bin, fn)) {
      t.traceback = std::move(*tb);
      for (const auto& a : t.traceback->args) t.argsMore = t.argsMore || a.kind == ArgInfoItem::Kind::More;
      layout = t.traceback->words;
    }
  }
  if (!layout) {
    t.raw = true;
    return t;
  }
  auto plan = planCaptures(*layout, copts);
  if (!plan) {
    t.raw = true;
    return t;
  }
  t.layout = std::move(*layout);
  t.plan = std::move(*plan);
  return t;
}

Result<std::vector<BoundFilterTerm>> filterFor(const FunctionTrace& t, const FilterExpr& filter, const std::string& func) {
  if (t.raw || t.traceback)
    return fail(ErrorKind::Usage, "filter: " + func + "'s arguments have no names here (no DWARF, no signature)",
                "give its signature, e.g. goscope trace 'main.add(x int, y int) int' --filter 'x > 40'");
  return bindFilter(filter, t.layout, func);
}

bool hiddenParameter(const std::string& name) { return name.empty() || name[0] == '.' || name == "_"; }

}  // namespace goscope
