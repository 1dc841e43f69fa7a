#include "backend/bpf/function_capture.hpp"

#include "probe/argument_sources.hpp"
#include "binary/arg_info.hpp"

#include <span>

namespace goscope {

namespace {

// Where the decoded value of the layout's word i is in `words`: at i, or,
// after a typed receiver (one value for the first `firstWord` words), at
// 1 + i - firstWord.
struct WordIndex {
  size_t firstWord = 0;
  size_t base = 0;
  size_t operator()(size_t i) const { return base + (i - firstWord); }
};

void group(std::span<const ArgInfoItem> items, const TracebackLayout& t, std::vector<Value>& words, WordIndex at,
           size_t& next, std::vector<Value>& out, bool& more) {
  for (const auto& item : items) {
    switch (item.kind) {
      case ArgInfoItem::Kind::Word: {
        const size_t i = next++;
        if (at(i) >= words.size() || i >= t.words.size()) {
          out.push_back(Value::missing("not decoded"));
        } else if (!t.words[i].problem.empty()) {
          out.push_back(Value::missing("unplaced"));
        } else {
          out.push_back(std::move(words[at(i)]));
          out.back().name.clear();
          if (out.back().kind == Value::Kind::Uint) out.back().type = "uintptr";  // hex, as the traceback prints words
        }
        break;
      }
      case ArgInfoItem::Kind::Group: {
        Value g;
        g.kind = Value::Kind::Group;
        group(item.items, t, words, at, next, g.children, g.more);
        out.push_back(std::move(g));
        break;
      }
      case ArgInfoItem::Kind::More: more = true; break;
      case ArgInfoItem::Kind::Beyond: out.push_back(Value::missing("offset past the layout's encoding")); break;
    }
  }
}

}  // namespace

void groupWords(const TracebackLayout& t, std::vector<Value>& words, std::vector<Value>& out, bool& more) {
  out.clear();
  more = false;
  std::span<const ArgInfoItem> items(t.args);
  size_t next = 0;
  WordIndex at;
  if (t.receiverWords > 0 && !items.empty() && !words.empty()) {
    out.push_back(std::move(words.front()));  // the receiver, typed and named
    items = items.subspan(1);
    next = at.firstWord = t.receiverWords;
    at.base = 1;
  }
  group(items, t, words, at, next, out, more);
}

FunctionTrace traceFor(const GoBinary& bin, const GoFunction& fn, const std::map<std::string, std::string>& signatures,
                       const CaptureOptions& copts, RuntimeTypeGraph* graph) {
  FunctionTrace t;
  std::optional<RuntimeTypeGraph> own;
  if (!graph) graph = &own.emplace(bin);
  FunctionArguments a = argumentsOf(bin, fn, signatures, *graph);
  t.inferred = std::move(a.inferred);
  t.inferenceRefused = std::move(a.inferenceRefused);
  if (a.from == ArgumentsFrom::None) {
    t.raw = true;
    return t;
  }
  auto plan = planCaptures(a.layout, copts);
  if (!plan) {
    t.raw = true;
    return t;
  }
  t.from = a.from;
  if (a.traceback) {
    for (const auto& item : a.traceback->args) t.argsMore = t.argsMore || item.kind == ArgInfoItem::Kind::More;
    t.traceback = std::move(a.traceback);
  }
  t.layout = std::move(a.layout);
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
