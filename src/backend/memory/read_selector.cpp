#include "backend/memory/read_selector.hpp"

namespace goscope {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool identStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool identChar(char c) { return identStart(c) || (c >= '0' && c <= '9'); }
// A package path's characters, as they appear in DWARF names (a dot in the
// last element is escaped as %2e there, and may be typed either way).
bool pathChar(char c) { return identChar(c) || c == '.' || c == '/' || c == '-' || c == '%' || c == '~'; }

// A struct with no field `name` and nothing embedded a promoted field could
// come from: Go itself would reject the selector.
bool lacksField(const GoType& t, std::string_view name) {
  if (t.kind != GoType::Kind::Struct) return false;
  for (const auto& x : t.fields)
    if (x.embedded || x.name == name) return false;
  return true;
}

bool identifier(std::string_view s) {
  if (s.empty() || !identStart(s.front())) return false;
  for (char c : s)
    if (!identChar(c)) return false;
  return true;
}

}  // namespace

std::optional<ReadSelector> parseReadSelector(std::string_view expr) {
  ReadSelector out;
  std::string_view e = trim(expr);
  for (const char* fn : {"len", "cap"}) {
    const std::string open = std::string(fn) + "(";
    if (e.size() > open.size() + 1 && e.substr(0, open.size()) == open && e.back() == ')') {
      out.builtin = fn;
      e = trim(e.substr(open.size(), e.size() - open.size() - 1));
      break;
    }
  }
  if (e.empty() || e.front() == '.' || e.back() == '.' || e.find("..") != std::string_view::npos) return std::nullopt;
  for (char c : e)
    if (!pathChar(c)) return std::nullopt;
  // The fields after the variable are identifiers; the variable part is
  // checked against DWARF's names.
  out.path = std::string(e);
  return out;
}

std::vector<std::string> variableCandidates(std::string_view path) {
  std::vector<std::string> out;
  const size_t slash = path.rfind('/');
  const size_t from = slash == std::string_view::npos ? 0 : slash + 1;
  // Every prefix ending before a dot (or the whole path), longest first; the
  // package part needs at least one dot before the variable.
  out.emplace_back(path);
  for (size_t at = path.size(); at-- > from;)
    if (path[at] == '.') out.emplace_back(path.substr(0, at));
  return out;
}

SelectorResolution resolveSelector(const DwarfInfo& d, std::string_view path) {
  SelectorResolution r;
  for (const std::string& base : variableCandidates(path)) {
    const GoVariable* v = d.variable(base);
    if (!v) continue;
    std::string type = v->type;
    uint64_t offset = 0;
    std::string at = base;
    std::string_view rest = path.substr(base.size());
    while (!rest.empty()) {
      rest.remove_prefix(1);  // the dot
      const size_t dot = rest.find('.');
      const std::string_view field = rest.substr(0, dot);
      rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot);
      if (!identifier(field)) {
        r.why = std::string(path) + " is not a field selection (" + std::string(field) + "): Delve evaluates it";
        return r;
      }
      const GoType* t = d.type(type);
      if (!t) {
        r.missingType = type;
        return r;
      }
      if (t->kind == GoType::Kind::Pointer) {
        // Read behind it is Delve's; whether the field exists is the
        // pointee's type's to say.
        const GoType* e = d.type(t->elem);
        if (!e) {
          r.missingType = t->elem;
          return r;
        }
        if (lacksField(*e, field)) {
          r.noSuchField = true;
          r.why = at + " (" + type + ") has no field " + std::string(field);
          return r;
        }
        r.why = std::string(path) + ": the field " + std::string(field) + " is behind a pointer (" + at + " is " + type +
                "): Delve follows it";
        return r;
      }
      const GoType::Field* f = nullptr;
      if (t->kind == GoType::Kind::Struct)
        for (const auto& x : t->fields)
          if (x.name == field) f = &x;
      if (!f) {
        r.noSuchField = lacksField(*t, field);
        r.why = r.noSuchField ? at + " (" + type + ") has no field " + std::string(field)
                              : std::string(path) + ": " + at + " (" + type + ") has no field " + std::string(field) +
                                    " of its own (a promoted field, or none): Delve evaluates it";
        return r;
      }
      offset += f->offset;
      type = f->type;
      at += "." + std::string(field);
    }
    r.place = SelectorPlace{v->address + offset, type};
    return r;
  }
  r.why = std::string(path) + " is not a package variable (an expression, or unknown): Delve evaluates it";
  return r;
}

bool builtinApplies(const std::string& builtin, GoType::Kind kind) {
  using K = GoType::Kind;
  if (builtin == "len") return kind == K::String || kind == K::Array || kind == K::Slice || kind == K::Map || kind == K::Chan;
  if (builtin == "cap") return kind == K::Array || kind == K::Slice || kind == K::Chan;
  return builtin.empty();
}

}  // namespace goscope
