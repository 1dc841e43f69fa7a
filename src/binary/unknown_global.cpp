#include "binary/unknown_global.hpp"

#include <string_view>
#include <vector>

namespace goscope {

namespace {

bool isIdentifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (unsigned char c : s)  // bytes >= 0x80: Go allows Unicode letters
    if (!(c == '_' || c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return false;
  return true;
}

// `name` is `qualified` or ends in "/" + qualified.
bool names(std::string_view name, std::string_view qualified) {
  if (name.size() == qualified.size()) return name == qualified;
  return name.size() > qualified.size() && name.ends_with(qualified) && name[name.size() - qualified.size() - 1] == '/';
}

// A function of package `pkg` (its path's last element): `pkg.f`,
// `pkg.(*T).M`, `a/b/pkg.f`.
bool isPackageOf(std::string_view fn, std::string_view pkg) {
  for (size_t at = fn.find(pkg); at != std::string_view::npos; at = fn.find(pkg, at + 1)) {
    if (at + pkg.size() >= fn.size() || fn[at + pkg.size()] != '.') continue;
    if (at == 0 || fn[at - 1] == '/') return true;
  }
  return false;
}

// Delve's pseudo-variables (pkg/proc/eval.go): not in any binary.
bool isDelvePseudoVariable(std::string_view pkg, std::string_view name) {
  return pkg == "runtime" && (name == "curg" || name == "frameoff" || name == "threadid" || name == "rangeParentOffset");
}

}  // namespace

std::optional<Error> unknownGlobal(const GoBinary& bin, const std::string& expr) {
  std::string_view e(expr);
  while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
  while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
  // len(X), cap(X): X is what must exist.
  for (std::string_view fn : {"len(", "cap("})
    if (e.size() > fn.size() + 1 && e.substr(0, fn.size()) == fn && e.back() == ')')
      return unknownGlobal(bin, std::string(e.substr(fn.size(), e.size() - fn.size() - 1)));
  std::vector<std::string_view> parts;
  std::string_view rest(e);
  for (size_t dot; (dot = rest.find('.')) != std::string_view::npos; rest.remove_prefix(dot + 1))
    parts.push_back(rest.substr(0, dot));
  parts.push_back(rest);
  if (parts.size() < 2) return std::nullopt;
  for (auto p : parts)
    if (!isIdentifier(p)) return std::nullopt;
  const std::string_view pkg = parts[0], name = parts[1];
  if (isDelvePseudoVariable(pkg, name)) return std::nullopt;
  const std::string qualified = std::string(pkg) + "." + std::string(name);

  const DwarfInfo* d = bin.dwarfGlobals({qualified});
  if (!d || d->declares(qualified)) return std::nullopt;
  for (const auto& s : bin.elf().symbols())
    if (names(s.name, qualified)) return std::nullopt;
  bool packageKnown = false;
  for (const auto& fn : bin.pclntab().functions()) {
    if (names(fn.name, qualified)) return std::nullopt;
    packageKnown = packageKnown || isPackageOf(fn.name, pkg);
  }
  if (!packageKnown) return std::nullopt;  // a local of that name, or a package Delve knows otherwise
  return Error{ErrorKind::NoMatch, "no package variable " + qualified + " in " + bin.name(),
               "check the spelling: its DWARF has no variable, constant or function of that name"};
}

}  // namespace goscope
