#include "probe/method_signature.hpp"

#include "binary/go_signature.hpp"

namespace goscope {

namespace {

using K = GoType::Kind;

constexpr size_t kLimit = 10;    // TraceArgsLimit
constexpr int kMaxDepth = 5;     // TraceArgsMaxDepth

bool aggregate(const TypeShape& t) {
  return t.kind == K::Struct || t.kind == K::Array || t.kind == K::Complex64 || t.kind == K::Complex128 ||
         t.kind == K::Interface || t.kind == K::String || t.kind == K::Slice;
}

class Emitter {
 public:
  // EmitArgInfo's visitType: false when the limit stopped it.
  bool visit(const TypeShape* t, int depth, std::vector<ArgInfoItem>& out) {
    if (n_ >= kLimit) {
      out.push_back({ArgInfoItem::Kind::More});
      return false;
    }
    if (!t || !aggregate(*t)) {
      out.push_back({ArgInfoItem::Kind::Word});
      n_++;
      return true;
    }
    ArgInfoItem g;
    g.kind = ArgInfoItem::Kind::Group;
    depth++;
    if (depth >= kMaxDepth) {
      g.items.push_back({ArgInfoItem::Kind::More});
      out.push_back(std::move(g));
      n_++;
      return true;
    }
    auto words = [&](int count) {
      for (int i = 0; i < count; i++)
        if (!visit(nullptr, depth, g.items)) break;
    };
    switch (t->kind) {
      case K::Interface: case K::String: case K::Complex64: case K::Complex128: words(2); break;
      case K::Slice: words(3); break;
      case K::Array:
        if (t->count == 0) n_++;
        for (uint64_t i = 0; i < t->count; i++)
          if (!visit(t->elem.get(), depth, g.items)) break;
        break;
      default:  // Struct
        if (t->fields.empty()) n_++;
        for (const auto& f : t->fields)
          if (!visit(f.type.get(), depth, g.items)) break;
    }
    out.push_back(std::move(g));
    return true;
  }

 private:
  size_t n_ = 0;
};

bool sameShape(const std::vector<ArgInfoItem>& a, const std::vector<ArgInfoItem>& b) {
  return argInfoShape(a) == argInfoShape(b);
}

}  // namespace

std::optional<MethodName> parseMethodName(std::string_view name) {
  if (name.find('[') != std::string_view::npos || name.ends_with("-fm")) return std::nullopt;
  const size_t slash = name.rfind('/');
  const size_t pkgEnd = name.find('.', slash == std::string_view::npos ? 0 : slash + 1);
  if (pkgEnd == std::string_view::npos) return std::nullopt;
  const std::string_view pkg = name.substr(slash == std::string_view::npos ? 0 : slash + 1, pkgEnd - (slash == std::string_view::npos ? 0 : slash + 1));
  std::string_view rest = name.substr(pkgEnd + 1);
  MethodName m;
  if (rest.starts_with("(*")) {
    const size_t close = rest.find(").");
    if (close == std::string_view::npos) return std::nullopt;
    m.pointer = true;
    m.receiver = std::string(pkg) + "." + std::string(rest.substr(2, close - 2));
    rest = rest.substr(close + 2);
  } else {
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    m.receiver = std::string(pkg) + "." + std::string(rest.substr(0, dot));
    rest = rest.substr(dot + 1);
  }
  if (rest.empty() || rest.find('.') != std::string_view::npos || m.receiver.ends_with(".")) return std::nullopt;
  m.method = std::string(rest);
  return m;
}

std::vector<ArgInfoItem> argInfoFor(const std::vector<ShapePtr>& args) {
  Emitter e;
  std::vector<ArgInfoItem> out;
  for (const auto& a : args)
    if (!e.visit(a.get(), 0, out)) break;
  return out;
}

std::optional<InferredSignature> inferMethodSignature(RuntimeTypeGraph& graph, std::string_view funcName,
                                                      const std::optional<std::vector<ArgInfoItem>>& argInfo,
                                                      std::string& why) {
  why.clear();
  auto m = parseMethodName(funcName);
  if (!m) return std::nullopt;
  auto types = graph.methodTypes(m->receiver, m->pointer, m->method);
  if (!types) return std::nullopt;
  std::vector<ParamSpec> params;
  params.push_back({"recv", types->receiver, false});
  for (size_t i = 0; i < types->params.size(); i++) params.push_back({"p" + std::to_string(i), types->params[i], false});
  for (size_t i = 0; i < types->results.size(); i++) params.push_back({"~r" + std::to_string(i), types->results[i], true});
  ShapeBuilder builder(lookupIn(graph));
  std::vector<ShapePtr> shapes, argShapes;
  std::vector<std::string> problems;
  std::vector<SignatureParam> printed;
  for (const auto& p : params) {
    auto s = builder.build(p.type);
    if (!s) {
      why = "the method's types (" + p.type + ") do not lay out: " + s.error().message;
      return std::nullopt;
    }
    shapes.push_back(*s);
    problems.emplace_back();
    if (!p.isResult) argShapes.push_back(*s);
    printed.push_back({p.name, p.type, p.isResult});
  }
  InferredSignature sig;
  sig.text = formatSignature(funcName, printed);
  if (argInfo && !sameShape(argInfoFor(argShapes), *argInfo)) {
    why = "the method's types " + sig.text + " group its words as " + argInfoShape(argInfoFor(argShapes)) +
          ", the runtime's layout as " + argInfoShape(*argInfo);
    return std::nullopt;
  }
  if (!argInfo && !argShapes.empty()) {
    why = "the method's types cannot be checked: the function has no traceback layout";
    return std::nullopt;
  }
  sig.layout = assignLayout(params, shapes, problems);
  return sig;
}

std::optional<TypedReceiver> inferReceiver(RuntimeTypeGraph& graph, std::string_view funcName,
                                           const std::vector<ArgInfoItem>& argInfo) {
  auto m = parseMethodName(funcName);
  if (!m || argInfo.empty() || argInfo.front().kind == ArgInfoItem::Kind::More ||
      argInfo.front().kind == ArgInfoItem::Kind::Beyond || !graph.find(m->receiver))
    return std::nullopt;
  const std::string type = (m->pointer ? "*" : "") + m->receiver;
  ShapeBuilder builder(lookupIn(graph));
  auto shape = builder.build(type);
  if (!shape) return std::nullopt;
  const std::vector<ArgInfoItem> expected = argInfoFor({*shape});
  if (expected.size() != 1 || !sameShape(expected, {argInfo.front()})) return std::nullopt;
  TypedReceiver r;
  r.type = type;
  r.layout = assignLayout({{"recv", type, false}}, {*shape}, {std::string()}).front();
  r.words = argInfoWords({argInfo.front()});
  return r;
}

}  // namespace goscope
