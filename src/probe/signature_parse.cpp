#include "probe/signature_parse.hpp"

#include <cctype>

#include "binary/go_signature.hpp"

namespace goscope {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }

// Splits a list's inside on commas outside brackets. An empty list has no
// items; one trailing comma is allowed, as gofmt allows it.
Result<std::vector<std::string_view>> splitList(std::string_view inside) {
  std::vector<std::string_view> items;
  if (trim(inside).empty()) return items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= inside.size(); i++) {
    char c = i < inside.size() ? inside[i] : ',';
    if (c == '(' || c == '[' || c == '{') depth++;
    else if (c == ')' || c == ']' || c == '}') depth--;
    if (depth < 0) return fail(ErrorKind::Usage, "unbalanced brackets in `" + std::string(inside) + "`");
    if (c == ',' && depth == 0) {
      items.push_back(trim(inside.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return fail(ErrorKind::Usage, "unbalanced brackets in `" + std::string(inside) + "`");
  if (items.size() > 1 && items.back().empty()) items.pop_back();
  for (auto item : items)
    if (item.empty()) return fail(ErrorKind::Usage, "empty parameter in `(" + std::string(inside) + ")`");
  return items;
}

// `x int` -> {"x", "int"}; `int`, `chan int`, `func(int) bool` -> {"", type}.
std::pair<std::string_view, std::string_view> splitNameType(std::string_view item) {
  size_t i = 0;
  while (i < item.size() && isIdentChar(item[i])) i++;
  if (i == 0 || i == item.size() || !std::isspace(static_cast<unsigned char>(item[i]))) return {{}, item};
  auto first = item.substr(0, i);
  // Type keywords followed by a space are part of the type, not a name.
  for (std::string_view kw : {"chan", "func", "interface", "struct", "map"})
    if (first == kw) return {{}, item};
  return {first, trim(item.substr(i))};
}

std::string normalizeType(std::string_view t) {
  if (t.starts_with("...")) return "[]" + std::string(trim(t.substr(3)));
  return std::string(t);
}

// Go's rule: either every entry is `name type` (with `a, b T` grouping,
// where a lone identifier takes the type of the next entry that has one) or
// every entry is a type.
Result<std::vector<ParamSpec>> parseList(std::string_view inside, bool results, size_t& unnamedCounter) {
  auto items = splitList(inside);
  if (!items) return items.failure();
  std::vector<std::pair<std::string_view, std::string_view>> split;
  bool anyNamed = false;
  for (auto item : *items) {
    split.push_back(splitNameType(item));
    anyNamed |= !split.back().first.empty();
  }
  std::vector<ParamSpec> out;
  for (size_t i = 0; i < split.size(); i++) {
    auto [name, type] = split[i];
    ParamSpec p;
    p.isResult = results;
    if (!anyNamed) {
      p.name = (results ? "~r" : "~p") + std::to_string(unnamedCounter++);
      p.type = normalizeType(type);
    } else if (!name.empty()) {
      p.name = std::string(name);
      p.type = normalizeType(type);
    } else {
      // A lone identifier in a named list: a name grouped with the next type.
      bool ident = !type.empty();
      for (char c : type) ident &= isIdentChar(c);
      if (!ident)
        return fail(ErrorKind::Usage, "mixed named and unnamed parameters in `(" + std::string(inside) + ")`");
      size_t j = i + 1;
      while (j < split.size() && split[j].first.empty()) j++;
      if (j == split.size())
        return fail(ErrorKind::Usage, "parameter `" + std::string(type) + "` has no type");
      p.name = std::string(type);
      p.type = normalizeType(split[j].second);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Result<UserSignature> parseUserSignature(std::string_view text) {
  text = trim(text);
  if (text.starts_with("func ")) text = trim(text.substr(5));
  auto parts = splitSignature(text);
  if (!parts)
    return fail(ErrorKind::Usage, "cannot read the signature `" + std::string(text) + "`",
                "write it as Go does, with the full function name: 'main.add(x int, y int) int'");
  UserSignature sig;
  sig.funcName = std::string(trim(parts->name));
  if (sig.funcName.empty()) return fail(ErrorKind::Usage, "signature `" + std::string(text) + "` has no function name");
  size_t unnamed = 0;
  auto args = parseList(parts->params.substr(1, parts->params.size() - 2), false, unnamed);
  if (!args) return args.failure();
  sig.params = std::move(*args);

  auto res = trim(parts->results);
  unnamed = 0;
  if (res.starts_with("(")) {
    if (!res.ends_with(")"))
      return fail(ErrorKind::Usage,
                  "cannot read the results `" + std::string(res) + "` of `" + std::string(text) + "`");
    auto r = parseList(res.substr(1, res.size() - 2), true, unnamed);
    if (!r) return r.failure();
    for (auto& p : *r) sig.params.push_back(std::move(p));
  } else if (!res.empty()) {
    auto r = parseList(res, true, unnamed);
    if (!r) return r.failure();
    if (r->size() != 1 || !r->front().name.starts_with("~r"))
      return fail(ErrorKind::Usage, "several or named results need parentheses: `" + std::string(res) + "`");
    sig.params.push_back(std::move(r->front()));
  }
  return sig;
}

}  // namespace goscope
