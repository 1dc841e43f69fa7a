#include "cli/signature_specs.hpp"

#include "cli/command.hpp"
#include "cli/probe_options.hpp"
#include "probe/abi_layout.hpp"
#include "probe/signature_check.hpp"
#include "probe/signature_parse.hpp"
#include "probe/type_shape.hpp"
#include "binary/runtime_type_graph.hpp"
#include "output/stderr_lines.hpp"

namespace goscope::cli {

namespace {

// A SPEC with a space or ending in "()" is a signature the user gives for a
// stripped binary: `main.add(x int, y int) int`. Anything else is a pattern.
bool looksLikeSignature(const std::string& s) {
  return s.find(' ') != std::string::npos || (s.size() > 2 && s.ends_with("()"));
}

}  // namespace

void addLocations(const std::vector<std::string>& specs, ProbeRequest& r) {
  for (const auto& spec : specs) {
    if (!looksLikeSignature(spec)) {
      r.locations.push_back(spec);
      continue;
    }
    auto sig = orRaise(parseUserSignature(spec));
    // Named types (`w io.Writer`) are checked against the binary later, in
    // checkSignatures; here, only what the text alone can tell.
    orRaise(layoutFromSignature(spec, namedTypesUnchecked()));
    if (auto it = r.signatures.find(sig.funcName); it != r.signatures.end() && it->second != spec)
      raise({ErrorKind::Usage,
             "two signatures for " + sig.funcName + ": `" + it->second + "` and `" + spec + "`",
             "give one signature per function"});
    r.signatures[sig.funcName] = spec;
    r.locations.push_back(sig.funcName);
  }
}

void checkSignatures(ProbeRequest& r, const GoBinary& bin, bool forced) {
  if (r.signatures.empty()) return;
  RuntimeTypeGraph graph(bin);  // indexed once for every signature
  for (auto it = r.signatures.begin(); it != r.signatures.end();) {
    SignatureCheck c = checkSignature(bin, graph, it->first, it->second, forced);
    if (c.useSignature) {
      // What the binary's type data says of its named types: `w io.Writer`
      // is an interface there, `sq main.Square` a struct (refused).
      orRaise(layoutFromSignature(it->second, namedTypeKindsIn(graph), lookupIn(graph)));
      // It must fit the function table's frame (forced or not: that number
      // is the compiler's, not a description).
      if (auto e = checkSignatureFrame(bin, graph, it->first, it->second)) raise(*e);
    }
    if (!c.warning.empty()) output::noticeToStderr("warning: " + c.warning);
    it = c.useSignature ? std::next(it) : r.signatures.erase(it);
  }
}

}  // namespace goscope::cli
