// api::readDirect: `goscope read`'s zero-pause path. Every expression must
// be a package variable DWARF lays out fully (see session/direct_read.hpp);
// otherwise the caller plans Delve instead.
#include "api/goscope.hpp"
#include "session/direct_read.hpp"
#include "target/target.hpp"

namespace goscope::api {

Result<std::vector<rpc::Variable>> readDirect(const ProbeRequest& r) {
  if (!r.target.pid) return fail(ErrorKind::Usage, "read: name the process: -p PID");
  auto t = openProcessTarget(*r.target.pid);
  if (!t) return fail(t.error());
  return readDirect(r, *t);
}

Result<std::vector<rpc::Variable>> readDirect(const ProbeRequest& r, const Target& target) {
  if (!target.process) return fail(ErrorKind::Usage, "read: a direct read needs a running process (-p PID)");
  const Target* t = &target;
  for (const auto& e : r.capture.exprs)
    if (std::string why = directReadRefusal(*t->binary, e); !why.empty())
      return fail(ErrorKind::Usage, "read: cannot read " + e + " directly: " + why, "Delve can: --strategy delve");
  std::vector<rpc::Variable> out;
  for (const auto& e : r.capture.exprs) {
    auto v = readGlobalDirect(*t->binary, *t->process, t->loadBias, e);
    if (!v) return fail(v.error());
    out.push_back(std::move(*v));
  }
  return out;
}

}  // namespace goscope::api
