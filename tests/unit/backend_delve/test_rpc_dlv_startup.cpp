// What dlv prints when it starts or refuses to (Delve 1.20.2's wording,
// captured from the real dlv), the /proc signal masks the session checks, and
// how a stop becomes breakpoint hits.
#include <doctest/doctest.h>

#include "backend/delve/delve_session.hpp"
#include "backend/delve/dlv_startup.hpp"
#include "backend/delve/pending_signals.hpp"

using namespace goscope;
using namespace goscope::delve;

TEST_CASE("dlv's port line is found in its stdout") {
  CHECK(parseListeningPort("API server listening at: 127.0.0.1:41373\n") == std::optional<uint16_t>(41373));
  CHECK(parseListeningPort("WARNING: something\nAPI server listening at: 127.0.0.1:5\n") == std::optional<uint16_t>(5));
  CHECK(parseListeningPort("API server listening at: [::]:40000\r\n") == std::optional<uint16_t>(40000));
  CHECK_FALSE(parseListeningPort("API server listening at: 127.0.0.1:"));  // not complete yet
  CHECK_FALSE(parseListeningPort("API server listening at: 127.0.0.1:99999\n"));
  CHECK_FALSE(parseListeningPort(""));
}

TEST_CASE("dlv's attach failures become one-line errors with hints") {
  SUBCASE("a stripped binary") {
    auto e = classifyAttachFailure(12303,
                                   "could not attach to pid 12303: could not open debug info - debuggee must not be "
                                   "built with 'go run' or -ldflags='-s -w', which strip debug info\n");
    CHECK(e.kind == ErrorKind::BadTarget);
    CHECK(e.hint.find("BPF") != std::string::npos);
  }
  SUBCASE("a Go version Delve refuses, both directions") {
    auto old = classifyAttachFailure(
        7, "could not attach to pid 7: Go version 1.17.13 is too old for this version of Delve (minimum supported "
           "version 1.18, suppress this error with --check-go-version=false)\n");
    CHECK(old.kind == ErrorKind::BadTarget);
    CHECK(old.message.find("1.17.13") != std::string::npos);
    auto fresh = classifyAttachFailure(
        7, "could not attach to pid 7: Version of Delve is too old for Go version 1.22.0 (maximum supported version "
           "1.20, suppress this error with --check-go-version=false)\n");
    CHECK(fresh.kind == ErrorKind::BadTarget);
    CHECK(fresh.message.find("1.22.0") != std::string::npos);
  }
  SUBCASE("no such process") {
    CHECK(classifyAttachFailure(999999, "could not attach to pid 999999: no such process\n").kind == ErrorKind::NotFound);
  }
  SUBCASE("ptrace refused") {
    auto e = classifyAttachFailure(1, "could not attach to pid 1: operation not permitted\n");
    CHECK(e.kind == ErrorKind::Permission);
    CHECK_FALSE(e.hint.empty());
  }
  SUBCASE("anything else quotes dlv's line") {
    auto e = classifyAttachFailure(1, "some warning\nsomething new went wrong\n");
    CHECK(e.kind == ErrorKind::External);
    CHECK(e.message.find("something new went wrong") != std::string::npos);
    CHECK(e.message.find('\n') == std::string::npos);
  }
  SUBCASE("a thread that ended while dlv attached: Delve 1.24's error, 1.20.2's panic") {
    auto failed = classifyAttachFailure(
        7, "could not attach to pid 7: could not attach to new thread 12 no such process\n");
    CHECK(threadEndedWhileAttaching(failed));  // not "no process 7": the process is there
    CHECK(failed.message.find("new thread 12") != std::string::npos);
    auto panicked = classifyAttachFailure(
        7,
        "panic: runtime error: invalid memory address or nil pointer dereference\n"
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x802220]\n\ngoroutine 1 [running]:\n"
        "github.com/go-delve/delve/pkg/proc/native.(*nativeProcess).initialize(0xc000194e80, {0xc00003ade0, 0xe})\n"
        "\tgithub.com/go-delve/delve/pkg/proc/native/proc.go:324 +0x20e\n"
        "\tgithub.com/go-delve/delve/cmd/dlv/main.go:24 +0x18a\n");
    CHECK(threadEndedWhileAttaching(panicked));
    CHECK(panicked.message.find("nil pointer dereference") != std::string::npos);  // the panic, not its last frame
    auto other = classifyAttachFailure(7, "panic: something else\n\ngoroutine 1 [running]:\nmain.main()\n");
    CHECK_FALSE(threadEndedWhileAttaching(other));
    CHECK(other.message == "dlv failed: panic: something else");
    CHECK_FALSE(threadEndedWhileAttaching(classifyAttachFailure(7, "could not attach to pid 7: no such process\n")));
  }
  SUBCASE("dlv not installed") {
    auto e = dlvNotFound("dlv on $PATH");
    CHECK(e.kind == ErrorKind::External);
    CHECK(e.hint.find("apt-get install delve") != std::string::npos);
  }
}

TEST_CASE("pending signal masks in /proc status") {
  // ShdPnd after a halt reached a stopped target (measured): bit 5, SIGTRAP.
  const char* status = "Name:\tcounter\nSigQ:\t1/31503\nSigPnd:\t0000000000400000\nShdPnd:\t0000000000000010\n";
  CHECK(parseSignalMask(status, "ShdPnd") == std::optional<uint64_t>(0x10));
  CHECK(parseSignalMask(status, "SigPnd") == std::optional<uint64_t>(0x400000));  // SIGURG: harmless
  CHECK_FALSE(parseSignalMask(status, "SigBlk"));
  CHECK_FALSE(parseSignalMask("XShdPnd:\t10\n", "ShdPnd"));
}

TEST_CASE("a stop becomes breakpoint hits — Delve's own breakpoints are not ours") {
  rpc::DebuggerState st;
  rpc::Thread idle;
  idle.id = 1;
  rpc::Thread internal;
  internal.id = 2;
  internal.breakpoint = rpc::Breakpoint{};
  internal.breakpoint->id = -1;  // unrecovered-panic
  rpc::Thread hit;
  hit.id = 3;
  hit.goroutineID = 1;
  hit.function = rpc::Function{"main.doWork"};
  hit.breakpoint = rpc::Breakpoint{};
  hit.breakpoint->id = 4;
  hit.breakpointInfo = rpc::BreakpointInfo{};
  hit.breakpointInfo->variables.push_back(rpc::Variable{"main.counter"});
  st.threads = {idle, internal, hit};
  auto hits = hitsOf(st);
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].breakpointId == 4);
  CHECK(hits[0].threadId == 3);
  CHECK(hits[0].goroutineId == 1);
  CHECK(hits[0].function == "main.doWork");
  CHECK(hits[0].captured.variables.at(0).name == "main.counter");
}
