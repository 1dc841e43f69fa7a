#include "probe/signature_check.hpp"

#include "binary/go_runtime_facts.hpp"
#include "binary/runtime_type_graph.hpp"

#include "probe/abi_layout.hpp"
#include "binary/dwarf_info.hpp"

namespace goscope {

namespace {

// Go's aliases, so `[]byte` and `[]uint8` agree.
std::string canonicalType(std::string t) {
  auto replaceWord = [&](const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = t.find(from, at)) != std::string::npos;) {
      bool startOk = at == 0 || !(std::isalnum(static_cast<unsigned char>(t[at - 1])) || t[at - 1] == '_' || t[at - 1] == '.');
      size_t end = at + from.size();
      bool endOk = end == t.size() || !(std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_');
      if (startOk && endOk) {
        t.replace(at, from.size(), to);
        at += to.size();
      } else {
        at = end;
      }
    }
  };
  replaceWord("byte", "uint8");
  replaceWord("rune", "int32");
  replaceWord("any", "interface {}");
  return t;
}

// The compiler's own parameters (the generic dictionary `.dict`, `_`) are
// not in a user's signature.
bool compilerParameter(const ValueLayout& v) { return v.name.empty() || v.name[0] == '.' || v.name == "_"; }

// "(x int, y int) int" for the message.
std::string shape(const std::vector<ValueLayout>& layout) {
  std::string args, results;
  size_t nResults = 0;
  for (const auto& v : layout) {
    if (compilerParameter(v)) continue;
    std::string one = (v.name.empty() || v.name[0] == '~' ? "" : v.name + " ") + v.type;
    std::string& into = v.isResult ? results : args;
    into += (into.empty() ? "" : ", ") + one;
    nResults += v.isResult;
  }
  std::string out = "(" + args + ")";
  if (nResults == 1) out += " " + results;
  if (nResults > 1) out += " (" + results + ")";
  return out;
}

bool sameTypes(const std::vector<ValueLayout>& a, const std::vector<ValueLayout>& b) {
  std::vector<const ValueLayout*> x, y;
  for (const auto& v : a)
    if (!compilerParameter(v)) x.push_back(&v);
  for (const auto& v : b)
    if (!compilerParameter(v)) y.push_back(&v);
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); i++)
    if (x[i]->isResult != y[i]->isResult || canonicalType(x[i]->type) != canonicalType(y[i]->type)) return false;
  return true;
}

}  // namespace

std::optional<Error> checkSignatureFrame(const GoBinary& bin, RuntimeTypeGraph& graph, const std::string& funcName,
                                         const std::string& signature) {
  const GoFunction* fn = bin.pclntab().functionNamed(funcName);
  if (!fn || fn->args < 0) return std::nullopt;
  // A Go 1.16 program's frame is the stack ABI's, which the layout below is
  // not: the release's own refusal (stackAbiRefusal) says why, later.
  if (!stackAbiRefusal(bin).empty()) return std::nullopt;
  auto layout = layoutFromSignature(signature, namedTypeKindsIn(graph), lookupIn(graph));
  if (!layout) return std::nullopt;  // (its own error is raised where it is parsed)
  auto frame = argumentFrameSize(*layout);
  if (!frame || *frame == static_cast<uint64_t>(fn->args)) return std::nullopt;
  return Error{ErrorKind::Usage,
               "the signature `" + signature + "` makes an argument frame of " + std::to_string(*frame) +
                   " bytes, but the binary's function table says " + funcName + "'s is " + std::to_string(fn->args) +
                   " bytes: a value is missing, extra or of another size",
               "check the number and types of the arguments and results (a method's receiver comes first)"};
}

SignatureCheck checkSignature(const GoBinary& bin, RuntimeTypeGraph& graph, const std::string& funcName,
                              const std::string& signature,
                              bool forced) {
  SignatureCheck out;
  const DwarfInfo* dwarf = bin.dwarf();
  const GoFunction* fn = bin.pclntab().functionNamed(funcName);
  if (!dwarf || !fn) return out;
  const DwarfFunction* df = dwarf->functionAt(fn->entry);
  if (!df) return out;
  auto fromDwarf = layoutFunction(*dwarf, *df, fn->args);
  auto fromUser = layoutFromSignature(signature, namedTypeKindsIn(graph), lookupIn(graph));
  if (!fromDwarf || !fromUser || sameTypes(*fromDwarf, *fromUser)) return out;
  const std::string disagree = "the signature `" + signature + "` disagrees with the binary's DWARF, which says " +
                               funcName + shape(*fromDwarf);
  if (forced) {
    out.warning = disagree + "; yours is used (--force-signature)";
    return out;
  }
  out.useSignature = false;
  out.warning = disagree + ": DWARF's is used (hint: --force-signature uses yours)";
  return out;
}

}  // namespace goscope
