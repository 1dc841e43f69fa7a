#include "binary/go_signature.hpp"

#include <algorithm>
#include <charconv>

namespace goscope {

static bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// `~r3`: a compiler-named unnamed result.
static bool isUnnamedResult(std::string_view n) { return startsWith(n, "~r") || startsWith(n, "~R"); }

static bool isSynthetic(std::string_view n) { return n.empty() || n == "_" || startsWith(n, "~"); }

std::string formatSignature(std::string_view funcName, std::span<const SignatureParam> params) {
  std::string out(funcName);
  out += '(';
  bool first = true;
  for (const auto& p : params) {
    if (p.isResult) continue;
    if (!first) out += ", ";
    first = false;
    out += isSynthetic(p.name) ? std::string_view("_") : p.name;
    out += ' ';
    out += p.type;
  }
  out += ')';

  std::vector<const SignatureParam*> results;
  for (const auto& p : params)
    if (p.isResult) results.push_back(&p);
  if (results.empty()) return out;
  bool named = std::any_of(results.begin(), results.end(),
                           [](const SignatureParam* p) { return !isUnnamedResult(p->name); });
  if (!named && results.size() == 1) return out + " " + std::string(results[0]->type);
  out += " (";
  for (size_t i = 0; i < results.size(); i++) {
    if (i) out += ", ";
    if (named) {
      // `~bN` (declared `_`) and, in a mixed list, `~rN` print as `_`.
      out += isSynthetic(results[i]->name) ? std::string_view("_") : results[i]->name;
      out += ' ';
    }
    out += results[i]->type;
  }
  return out + ")";
}

std::optional<SignatureParts> splitSignature(std::string_view sig) {
  // The parameter list is the first `(` at bracket depth 0 that does not
  // open a receiver group: those follow a `.` (`main.(*S).M`).
  int depth = 0;
  size_t open = std::string_view::npos;
  for (size_t i = 0; i < sig.size() && open == std::string_view::npos; i++) {
    char c = sig[i];
    if (c == '[') depth++;
    else if (c == ']') depth--;
    else if (c == '(' && depth == 0 && (i == 0 || sig[i - 1] != '.')) open = i;
  }
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  depth = 0;
  for (size_t i = open; i < sig.size(); i++) {
    if (sig[i] == '(' || sig[i] == '[' || sig[i] == '{') depth++;
    else if (sig[i] == ')' || sig[i] == ']' || sig[i] == '}') depth--;
    if (depth == 0)
      return SignatureParts{sig.substr(0, open), sig.substr(open, i + 1 - open), sig.substr(i + 1)};
  }
  return std::nullopt;
}

GenericName splitGenericName(std::string_view name) {
  GenericName g;
  size_t open = name.find('[');
  if (open == std::string_view::npos) {
    g.stem = name;
    return g;
  }
  // Find the matching bracket; type arguments may nest brackets and commas
  // (`go.shape.[]int_0`, `go.shape.map[string]int_1`, `go.shape.struct { A int; B int }_0`).
  int depth = 0;
  size_t argStart = open + 1, close = std::string_view::npos;
  for (size_t i = open; i < name.size(); i++) {
    char c = name[i];
    if (c == '[' || c == '(' || c == '{') {
      depth++;
    } else if (c == ']' || c == ')' || c == '}') {
      if (--depth == 0) {
        g.typeArgs.emplace_back(name.substr(argStart, i - argStart));
        close = i;
        break;
      }
    } else if (c == ',' && depth == 1) {
      g.typeArgs.emplace_back(name.substr(argStart, i - argStart));
      argStart = i + 1;
    }
  }
  if (close == std::string_view::npos) {  // unbalanced: not a name we understand
    g.stem = name;
    g.typeArgs.clear();
    return g;
  }
  g.stem = std::string(name.substr(0, open + 1)) + std::string(name.substr(close));
  return g;
}

int shapeIndex(std::string_view arg) {
  if (!startsWith(arg, "go.shape.")) return -1;
  size_t us = arg.rfind('_');
  if (us == std::string_view::npos || us + 1 >= arg.size()) return -1;
  int idx = -1;
  auto [p, ec] = std::from_chars(arg.data() + us + 1, arg.data() + arg.size(), idx);
  if (ec != std::errc() || p != arg.data() + arg.size()) return -1;
  return idx;
}

std::string replaceShapes(std::string_view text, const std::vector<std::string>& shapeArgs,
                          const std::vector<std::string>& typeParamNames) {
  std::vector<std::pair<std::string, std::string>> subst;
  for (const auto& a : shapeArgs) {
    int i = shapeIndex(a);
    if (i >= 0 && static_cast<size_t>(i) < typeParamNames.size()) subst.emplace_back(a, typeParamNames[i]);
  }
  std::sort(subst.begin(), subst.end(), [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool hit = false;
    for (const auto& [from, to] : subst) {
      if (text.substr(i, from.size()) == from) {
        out += to;
        i += from.size();
        hit = true;
        break;
      }
    }
    if (!hit) out += text[i++];
  }
  return out;
}

}  // namespace goscope
