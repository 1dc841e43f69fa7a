#include "session/fallback.hpp"

namespace goscope::session {

bool mayFallBack(const ProbeRequest& r, const Plan& plan, Backend failed, const Error& why) {
  if (r.strategy != StrategyChoice::Auto || !plan.fallback || *plan.fallback == failed) return false;
  switch (failed) {
    case Backend::Delve:
      return why.kind == ErrorKind::External || why.kind == ErrorKind::BadTarget || why.kind == ErrorKind::Permission;
    case Backend::DirectRead:
      return why.kind != ErrorKind::TargetGone;  // a process that exited has nothing for Delve either
    case Backend::Bpf:
      return false;  // no plan falls back from BPF: what BPF cannot attach, a breakpoint per hit would not serve
  }
  return false;
}

std::string fallbackNotice(Backend from, Backend to, const Error& why) {
  return std::string("the ") + backendName(from) + " path failed (" + why.message + "); falling back to " + backendName(to);
}

}  // namespace goscope::session
