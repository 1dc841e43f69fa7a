// The placement rule for inlined bodies (binary/inline_placement.hpp,
// docs/go-runtime.md "Inlined calls") on hand-assembled callers: the body's
// first instruction when every call passes it exactly once, the next one when
// it is unsafe, and a refusal with the reason otherwise.
#include <doctest/doctest.h>

#include <vector>

#include "binary/disasm.hpp"
#include "binary/inline_placement.hpp"

using namespace goscope;
using Bytes = std::vector<uint8_t>;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

namespace {

constexpr uint64_t kEntry = 0x1000;

InlinedSite place(const Bytes& code, const Ranges& body, uint64_t parentPc = 0) {
  auto fn = analyzeFunction(code, kEntry);
  REQUIRE(fn.has_value());
  InlinedSite s;
  placeInlinedProbe(*fn, code, body, parentPc, s);
  return s;
}

// A caller's loop around a one-instruction body:
//   1000 xor ecx,ecx; 1002 jmp 1008; 1004 inc rcx (body); 1007 nop;
//   1008 cmp rcx,rax; 100b jl 1004; 100d ret
const Bytes kLoop = {0x31, 0xc9, 0xeb, 0x04, 0x48, 0xff, 0xc1, 0x90, 0x48, 0x39, 0xc1, 0x7c, 0xf7, 0xc3};

}  // namespace

TEST_CASE("inline placement: a body inside the caller's loop is probed at its first instruction") {
  auto s = place(kLoop, {{0x1004, 0x1007}});
  CHECK(s.probes == std::vector<uint64_t>{0x1004});
  CHECK(s.reason.find("first instruction") != std::string::npos);
}

TEST_CASE("inline placement: a loop of the body itself back to its first instruction is refused") {
  //   1000 xor ecx,ecx; 1002 inc rcx; 1005 cmp rcx,rax; 1008 jl 1002 (all three the body's); 100a ret
  // The whole loop is the inlined function's: its first instruction runs once per iteration.
  const Bytes code = {0x31, 0xc9, 0x48, 0xff, 0xc1, 0x48, 0x39, 0xc1, 0x7c, 0xf8, 0xc3};
  auto s = place(code, {{0x1002, 0x100a}});
  CHECK(s.probes.empty());
  CHECK(s.reason.find("loop inside the body") != std::string::npos);
  // A rotated loop (entered at its test, 1008) is refused by the first rule.
  auto rotated = place(kLoop, {{0x1004, 0x100d}});
  CHECK(rotated.probes.empty());
  CHECK(rotated.reason.find("entered at 0x1008") != std::string::npos);
}

TEST_CASE("inline placement: a body entered other than through its first instruction is refused") {
  // 1008 (cmp) counted as body: the caller's jmp reaches it without passing 1004.
  auto s = place(kLoop, {{0x1004, 0x1007}, {0x1008, 0x100b}});
  CHECK(s.probes.empty());
  CHECK(s.reason.find("entered at 0x1008") != std::string::npos);
}

TEST_CASE("inline placement: an unsafe first instruction moves to the next one, which runs exactly when it does") {
  //   1000 xor ecx,ecx; 1002 lock incq (%rcx) (body); 1006 inc rcx (body); 1009 ret
  const Bytes code = {0x31, 0xc9, 0xf0, 0x48, 0xff, 0x01, 0x48, 0xff, 0xc1, 0xc3};
  auto s = place(code, {{0x1002, 0x1009}});
  CHECK(s.probes == std::vector<uint64_t>{0x1006});
  CHECK(s.reason.find("unsafe") != std::string::npos);
  // The lock-prefixed instruction alone in its body: nothing later inside it.
  auto alone = place(code, {{0x1002, 0x1006}});
  CHECK(alone.probes.empty());
  CHECK(alone.reason.find("unsafe to probe") != std::string::npos);
}

TEST_CASE("inline placement: a caller with a jump table is not analysed") {
  //   1000 xor ecx,ecx; 1002 inc rcx (body); 1005 jmp *%rax; 1007 ret
  const Bytes code = {0x31, 0xc9, 0x48, 0xff, 0xc1, 0xff, 0xe0, 0xc3};
  auto s = place(code, {{0x1002, 0x1005}});
  CHECK(s.probes.empty());
  CHECK(s.reason.find("indirect jump") != std::string::npos);
}

TEST_CASE("inline placement: a removed body is probed at a real inline mark, never at another instruction") {
  //   1000 xor ecx,ecx; 1002 nop (the mark); 1003 inc rcx; 1006 ret
  const Bytes code = {0x31, 0xc9, 0x90, 0x48, 0xff, 0xc1, 0xc3};
  auto mark = place(code, {}, 0x1002);
  CHECK(mark.probes == std::vector<uint64_t>{0x1002});
  auto other = place(code, {}, 0x1003);
  CHECK(other.probes.empty());
  CHECK(other.reason.find("no inline mark") != std::string::npos);
}
