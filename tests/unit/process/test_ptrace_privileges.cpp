// judgePtrace: the up-front verdict on whether goscope's dlv may ptrace a
// target, from the facts the kernel decides with (pure: no /proc here).
#include <doctest/doctest.h>

#include "process/ptrace_privileges.hpp"

using namespace goscope;

namespace {

PtraceFacts sameUserNoCaps() {
  PtraceFacts f;
  f.tracerUid = 1000;
  f.targetUid = 1000;
  f.targetSameUser = true;
  return f;
}

void expectRefusal(const PtraceFacts& f, ErrorKind kind, const std::string& needle) {
  auto r = judgePtrace(42, f);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == kind);
  CAPTURE(r.error().message);
  CHECK(r.error().message.find(needle) != std::string::npos);
  CHECK(r.error().message.find('\n') == std::string::npos);
}

}  // namespace

TEST_CASE("ptrace privileges: the same user without capabilities may attach (Yama 0 or absent)") {
  CHECK(judgePtrace(42, sameUserNoCaps()).has_value());
}

TEST_CASE("ptrace privileges: CAP_SYS_PTRACE opens every door but Yama 3 and another tracer") {
  PtraceFacts f = sameUserNoCaps();
  f.targetSameUser = false;
  f.targetCapsCovered = false;
  f.tracerHasSysPtrace = true;
  for (int scope : {0, 1, 2}) {
    f.yamaScope = scope;
    CHECK(judgePtrace(42, f).has_value());
  }
  f.yamaScope = 3;
  expectRefusal(f, ErrorKind::Permission, "kernel.yama.ptrace_scope is 3");
  f.yamaScope = 0;
  f.targetTracer = 77;
  expectRefusal(f, ErrorKind::BadTarget, "PID 42 is already traced by PID 77");
}

TEST_CASE("ptrace privileges: each missing piece is named") {
  PtraceFacts f = sameUserNoCaps();
  f.yamaScope = 1;
  expectRefusal(f, ErrorKind::Permission, "Delve needs CAP_SYS_PTRACE to attach to PID 42 (kernel.yama.ptrace_scope is 1");
  f.yamaScope = 2;
  expectRefusal(f, ErrorKind::Permission, "kernel.yama.ptrace_scope is 2");
  f = sameUserNoCaps();
  f.targetSameUser = false;
  f.targetUid = 0;
  expectRefusal(f, ErrorKind::Permission, "it runs as uid 0, goscope as uid 1000");
  f = sameUserNoCaps();
  f.targetCapsCovered = false;
  expectRefusal(f, ErrorKind::Permission, "it holds capabilities goscope's dlv would not have");
}
