// decideAccessScope: whose processes a BPF session may see, from this
// process's capabilities (pure: the kernel side is tested in
// tests/runtime/test_access_scope.cpp).
#include <doctest/doctest.h>

#include "backend/bpf/privileges.hpp"

using namespace goscope;
using namespace goscope::bpf;

TEST_CASE("bpf access scope: CAP_SYS_PTRACE in the initial user namespace sees every process") {
  Capabilities root{.root = true, .sysAdmin = true, .bpf = true, .perfmon = true, .sysPtrace = true, .permitted = ~0ULL};
  auto s = decideAccessScope(root, true, 0, 0);
  REQUIRE(s.has_value());
  CHECK(s->everyone);
  CHECK(accessNotice(*s).empty());
  // Not root, but granted CAP_SYS_PTRACE too (setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep).
  Capabilities granted{.bpf = true, .perfmon = true, .sysPtrace = true, .permitted = (1ULL << 19) | (3ULL << 38)};
  auto g = decideAccessScope(granted, true, 1000, 1000);
  REQUIRE(g.has_value());
  CHECK(g->everyone);
}

TEST_CASE("bpf access scope: cap_bpf and cap_perfmon alone see only the user's own processes") {
  const uint64_t permitted = 3ULL << 38;
  Capabilities c{.bpf = true, .perfmon = true, .permitted = permitted};
  auto s = decideAccessScope(c, true, 65534, 65533);
  REQUIRE(s.has_value());
  CHECK_FALSE(s->everyone);
  CHECK(s->uid == 65534);
  CHECK(s->gid == 65533);
  CHECK(s->capsCeiling == permitted);  // a target with more capabilities than goscope is not visible
  CHECK(accessNotice(*s).find("only processes of uid 65534") != std::string::npos);
  CHECK(foreignCallsLine(12) ==
        "goscope: 12 calls by processes of other users were not shown (goscope is not fully privileged: see "
        "docs/security.md)");
}

TEST_CASE("bpf access scope: root without CAP_SYS_PTRACE is not fully privileged") {
  // The kernel's rule: root may not ptrace a process whose capabilities it lacks.
  Capabilities c{.root = true, .sysAdmin = true, .bpf = true, .perfmon = true, .permitted = ~(1ULL << 19)};
  auto s = decideAccessScope(c, true, 0, 0);
  REQUIRE(s.has_value());
  CHECK_FALSE(s->everyone);
  CHECK(s->uid == 0);
  CHECK(s->capsCeiling == ~(1ULL << 19));
}

TEST_CASE("bpf access scope: another user namespace is refused") {
  Capabilities c{.root = true, .bpf = true, .perfmon = true, .sysPtrace = true, .permitted = ~0ULL};
  auto s = decideAccessScope(c, false, 0, 0);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().kind == ErrorKind::Permission);
  CHECK(s.error().message.find("user namespace") != std::string::npos);
}
