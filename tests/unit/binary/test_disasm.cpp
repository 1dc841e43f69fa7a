// Disassembly for probing: hand-assembled functions (bytes checked with GNU
// as/objdump) through analyzeFunction, and the pure rules (instruction
// parsing, the kernel's uprobe verdicts, the Go prologue, the probe choice).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "binary/disasm.hpp"
#include "binary/go_prologue.hpp"
#include "binary/uprobe_rules.hpp"
#include "binary/x86_insn.hpp"

using namespace goscope;
using Bytes = std::vector<uint8_t>;
using Kind = ProbeSite::Kind;

namespace {

constexpr uint64_t kEntry = 0x401000;

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

FunctionCode analyze(const Bytes& code) {
  auto r = analyzeFunction(code, kEntry);
  REQUIRE(r.has_value());
  return std::move(r).value();
}

std::string hexBytes(const Bytes& b) {
  std::string s;
  for (uint8_t x : b) s += "0123456789abcdef"[x >> 4], s += "0123456789abcdef"[x & 15], s += ' ';
  return s;
}

UprobeVerdict verdict(const Bytes& b) {
  auto v = x86::parseInsn(b);
  REQUIRE(v.has_value());
  return classifyForUprobe(*v);
}

// The Go 1.19 small-frame function: stack check, frame, a call, RET, and the
// morestack tail that jumps back to the entry; then int3 padding.
const Bytes kSmallFrame = {
    0x49, 0x3b, 0x66, 0x10,              // 0x00 cmp 0x10(%r14),%rsp
    0x76, 0x1d,                          // 0x04 jbe 0x23
    0x48, 0x83, 0xec, 0x18,              // 0x06 sub $0x18,%rsp
    0x48, 0x89, 0x6c, 0x24, 0x10,        // 0x0a mov %rbp,0x10(%rsp)
    0x48, 0x8d, 0x6c, 0x24, 0x10,        // 0x0f lea 0x10(%rsp),%rbp
    0xe8, 0x00, 0x00, 0x00, 0x00,        // 0x14 call
    0x48, 0x8b, 0x6c, 0x24, 0x10,        // 0x19 mov 0x10(%rsp),%rbp
    0x48, 0x83, 0xc4, 0x18,              // 0x1e add $0x18,%rsp
    0xc3,                                // 0x22 ret
    0xe8, 0x00, 0x00, 0x00, 0x00,        // 0x23 call runtime.morestack_noctxt
    0xeb, 0xd6,                          // 0x28 jmp 0x0
    0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,  // 0x2a padding to 0x30
};

// The prologue shapes, each a whole function (bytes checked with GNU as).
// Large frame: lea -N(%rsp),%r12; cmp 0x10(%r14),%r12; jbe; frame; two RETs.
const Bytes kLargeFrame = cat({
    {0x4c, 0x8d, 0x64, 0x24, 0xf8},                    // 0x00 lea -0x8(%rsp),%r12
    {0x4d, 0x3b, 0x66, 0x10},                          // 0x05 cmp 0x10(%r14),%r12
    {0x0f, 0x86, 0x1a, 0x00, 0x00, 0x00},              // 0x09 jbe 0x29
    {0x48, 0x81, 0xec, 0x88, 0x00, 0x00, 0x00},        // 0x0f sub $0x88,%rsp
    {0x48, 0x89, 0xac, 0x24, 0x80, 0x00, 0x00, 0x00},  // 0x16 mov %rbp,0x80(%rsp)
    {0x48, 0x8d, 0xac, 0x24, 0x80, 0x00, 0x00, 0x00},  // 0x1e lea 0x80(%rsp),%rbp
    {0x90},                                            // 0x26 nop
    {0xc3},                                            // 0x27 ret
    {0xc3},                                            // 0x28 ret (a second return)
    {0xe8, 0x00, 0x00, 0x00, 0x00},                    // 0x29 call morestack
});
// Huge frame: mov %rsp,%r12; sub; jb; cmp; jbe.
const Bytes kHugeFrame = cat({
    {0x49, 0x89, 0xe4},                          // 0x00 mov %rsp,%r12
    {0x49, 0x81, 0xec, 0x88, 0x0f, 0x00, 0x00},  // 0x03 sub $0xf88,%r12
    {0x72, 0x08},                                // 0x0a jb 0x14
    {0x4d, 0x3b, 0x66, 0x10},                    // 0x0c cmp 0x10(%r14),%r12
    {0x76, 0x02},                                // 0x10 jbe 0x14
    {0x90, 0xc3},                                // 0x12 nop; ret
    {0xe8, 0x00, 0x00, 0x00, 0x00},              // 0x14 call morestack
});
// ABI0 (non-PIE): mov %fs:-8,%r14 first.
const Bytes kTlsG = cat({{0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff},
                         {0x49, 0x3b, 0x66, 0x10}, {0x76, 0x01}, {0xc3}, {0xcc}});
// ABI0 (PIE): mov $-8,%r14; mov %fs:(%r14),%r14 first.
const Bytes kPieG = cat({{0x49, 0xc7, 0xc6, 0xf8, 0xff, 0xff, 0xff}, {0x64, 0x4d, 0x8b, 0x36},
                         {0x49, 0x3b, 0x66, 0x10}, {0x76, 0x01}, {0xc3}, {0xcc}});
// A g load without a stack check (an ABI wrapper).
const Bytes kGWrapper = cat({{0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff}, {0xc3}});
// A nosplit leaf: add %rbx,%rax; ret; padding.
const Bytes kLeaf = {0x48, 0x01, 0xd8, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc};
// Go 1.21 frame setup without a stack check: push; mov %rsp,%rbp; sub.
const Bytes kFrame121 = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10,
                         0x90, 0x48, 0x83, 0xc4, 0x10, 0x5d, 0xc3};

}  // namespace

TEST_CASE("small-frame prologue: probe the emulated jbe at entry+4") {
  const FunctionCode fn = analyze(kSmallFrame);
  CHECK(fn.entry == kEntry);
  CHECK(fn.end == kEntry + 0x30);
  CHECK(fn.prologue == GoPrologue::Form::Small);
  CHECK(fn.stackCheckBranch == kEntry + 4);
  CHECK(fn.morestackTarget == kEntry + 0x23);
  CHECK(fn.bodyStart == kEntry + 0x14);
  CHECK(fn.returns == std::vector<uint64_t>{kEntry + 0x22});
  CHECK(fn.instructionCount == 11);
  CHECK(fn.unsafe.empty());
  CHECK(fn.probe.kind == Kind::StackCheckBranch);
  CHECK(fn.probe.address == kEntry + 4);
  CHECK(fn.probe.reason.find("CF|ZF") != std::string::npos);
  CHECK(isInstructionBoundary(fn, kEntry + 4));
  CHECK_FALSE(isInstructionBoundary(fn, kEntry + 5));  // inside the jbe
  CHECK_FALSE(isSafeToProbe(fn, kEntry + 1));
  CHECK(isSafeToProbe(fn, kEntry + 0x22));
}

TEST_CASE("trailing int3 padding is not part of the body") {
  const FunctionCode fn = analyze(kSmallFrame);
  CHECK(fn.bodyEnd == kEntry + 0x2a);
  CHECK_FALSE(isInstructionBoundary(fn, kEntry + 0x2a));
  CHECK_FALSE(isSafeToProbe(fn, kEntry + 0x2b));
  CHECK(hazardAt(fn, kEntry + 0x2c) == Hazard::Undecodable);  // "not an instruction of the body"
  CHECK(fn.undecodable == std::nullopt);
}

TEST_CASE("jbe encoded as rel32") {
  const Bytes code = {
      0x49, 0x3b, 0x66, 0x10,              // cmp 0x10(%r14),%rsp
      0x0f, 0x86, 0x01, 0x00, 0x00, 0x00,  // jbe +1 -> 0x0b
      0xc3,                                // 0x0a ret
      0xe8, 0x00, 0x00, 0x00, 0x00,        // 0x0b call morestack
      0xeb, 0xee,                          // jmp 0x0
  };
  const FunctionCode fn = analyze(code);
  CHECK(fn.stackCheckBranch == kEntry + 4);
  CHECK(fn.morestackTarget == kEntry + 0x0b);
  CHECK(fn.bodyStart == kEntry + 0x0a);
  CHECK(fn.probe.kind == Kind::StackCheckBranch);
}

TEST_CASE("large-frame prologue: lea -N(%rsp),%r12 — cmp 0x10(%r14),%r12 — jbe") {
  const FunctionCode fn = analyze(kLargeFrame);
  CHECK(fn.prologue == GoPrologue::Form::Large);
  CHECK(fn.stackCheckBranch == kEntry + 9);
  CHECK(fn.morestackTarget == kEntry + 0x29);
  CHECK(fn.bodyStart == kEntry + 0x26);
  CHECK(fn.returns == std::vector<uint64_t>{kEntry + 0x27, kEntry + 0x28});
  CHECK(fn.probe.kind == Kind::StackCheckBranch);
  CHECK(fn.probe.address == kEntry + 9);
}

TEST_CASE("huge-frame prologue: mov %rsp,%r12 — sub — jb — cmp — jbe") {
  const FunctionCode fn = analyze(kHugeFrame);
  CHECK(fn.prologue == GoPrologue::Form::Huge);
  CHECK(fn.stackCheckBranch == kEntry + 0x10);
  CHECK(fn.morestackTarget == kEntry + 0x14);
  CHECK(fn.bodyStart == kEntry + 0x12);
  CHECK(fn.probe.address == kEntry + 0x10);
}

TEST_CASE("ABI0 and pre-1.17 prologues load g from TLS first") {
  SUBCASE("mov %fs:-8,%r14 (non-PIE)") {
    const FunctionCode fn = analyze(kTlsG);
    CHECK(fn.stackCheckBranch == kEntry + 13);
    CHECK(fn.probe.kind == Kind::StackCheckBranch);
  }
  SUBCASE("mov $-8,%r14; mov %fs:(%r14),%r14 (PIE)") {
    const FunctionCode fn = analyze(kPieG);
    CHECK(fn.stackCheckBranch == kEntry + 15);
  }
  SUBCASE("Go < 1.17: mov %fs:-8,%rcx; cmp 0x10(%rcx),%rsp") {
    const Bytes code = cat({{0x64, 0x48, 0x8b, 0x0c, 0x25, 0xf8, 0xff, 0xff, 0xff},
                            {0x48, 0x3b, 0x61, 0x10}, {0x76, 0x01}, {0xc3}, {0xcc}});
    const FunctionCode fn = analyze(code);
    CHECK(fn.stackCheckBranch == kEntry + 13);
  }
  SUBCASE("a g load without a stack check (ABI wrapper) is not a prologue") {
    const FunctionCode fn = analyze(kGWrapper);
    CHECK(fn.prologue == GoPrologue::Form::None);
    CHECK(fn.bodyStart == kEntry);
    CHECK(fn.probe.kind == Kind::SteppedEntry);
  }
}

TEST_CASE("a stack-guard compare against 0x18 (stackguard1) also counts") {
  const Bytes code = cat({{0x49, 0x3b, 0x66, 0x18}, {0x76, 0x01}, {0xc3}, {0xcc}});
  CHECK(analyze(code).stackCheckBranch == kEntry + 4);
}

TEST_CASE("nosplit leaf without prologue: the entry is single-stepped") {
  const FunctionCode fn = analyze(kLeaf);
  CHECK(fn.prologue == GoPrologue::Form::None);
  CHECK_FALSE(fn.stackCheckBranch.has_value());
  CHECK(fn.bodyStart == kEntry);
  CHECK(fn.returns == std::vector<uint64_t>{kEntry + 3});
  CHECK(fn.instructionCount == 2);
  CHECK(fn.bodyEnd == kEntry + 4);
  CHECK(fn.probe.kind == Kind::SteppedEntry);
  CHECK(fn.probe.address == kEntry);
}

TEST_CASE("push %rbp at the entry is emulated — Go 1.21 frame setup is recognised") {
  const FunctionCode fn = analyze(kFrame121);
  CHECK(fn.probe.kind == Kind::EmulatedEntry);
  CHECK(fn.probe.address == kEntry);
  CHECK(fn.bodyStart == kEntry + 8);
}

TEST_CASE("`49 90` at the entry (runtime.gcWriteBarrierR8): no probe, and why") {
  const Bytes code = {0x49, 0x90, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x49, 0x90, 0xc3, 0xcc, 0xcc};
  const FunctionCode fn = analyze(code);
  CHECK(fn.probe.kind == Kind::None);
  CHECK(fn.probe.reason.find("NOP") != std::string::npos);
  CHECK(fn.unsafe == std::vector<uint64_t>{kEntry, kEntry + 7});
  CHECK(fn.unsafeWhy == std::vector<Hazard>{Hazard::XchgRunAsNop, Hazard::XchgRunAsNop});
  CHECK(hazardAt(fn, kEntry + 7) == Hazard::XchgRunAsNop);
  CHECK(isSafeToProbe(fn, kEntry + 2));   // the call
  CHECK(fn.returns == std::vector<uint64_t>{kEntry + 9});
}

TEST_CASE("int3 at the entry or in the body is never probed") {
  SUBCASE("cc then ret (runtime.breakpoint)") {
    const FunctionCode fn = analyze({0xcc, 0xc3});
    CHECK(fn.probe.kind == Kind::None);
    CHECK(fn.unsafe == std::vector<uint64_t>{kEntry});
    CHECK(fn.unsafeWhy == std::vector<Hazard>{Hazard::Int3});
    CHECK(fn.bodyEnd == kEntry + 2);
  }
  SUBCASE("cd 03") {
    const FunctionCode fn = analyze({0xcd, 0x03, 0xeb, 0xfe});
    CHECK(fn.probe.kind == Kind::None);
    CHECK(fn.unsafeWhy == std::vector<Hazard>{Hazard::Int3});
  }
}

TEST_CASE("undecodable bytes end the sweep and are reported") {
  SUBCASE("an invalid opcode in the middle") {
    const FunctionCode fn = analyze({0x48, 0x01, 0xd8, 0x06, 0x90, 0xc3});  // add; (06: invalid); ...
    REQUIRE(fn.undecodable.has_value());
    CHECK(*fn.undecodable == kEntry + 3);
    CHECK(fn.bodyEnd == kEntry + 3);
    CHECK(fn.instructionCount == 1);
    CHECK(fn.returns.empty());  // the ret after the bad byte is never reached
    CHECK(fn.unsafe == std::vector<uint64_t>{kEntry + 3});
    CHECK(fn.unsafeWhy == std::vector<Hazard>{Hazard::Undecodable});
    CHECK(fn.probe.kind == Kind::SteppedEntry);
  }
  SUBCASE("a truncated instruction at the end") {
    const FunctionCode fn = analyze({0xc3, 0x48, 0x8b});
    CHECK(fn.undecodable == kEntry + 1);
  }
  SUBCASE("nothing decodable at the entry") {
    const FunctionCode fn = analyze({0x06});
    CHECK(fn.probe.kind == Kind::None);
    CHECK(fn.instructionCount == 0);
  }
}

// Instructions of Go 1.26 assembly (esbuild 0.28.2 from npm, go1.26.5; bytes
// and lengths from `objdump -d --insn-width=16`) that Capstone 4.0.2 did not
// decode: the sweep stopped there and every RET after them was missed.
TEST_CASE("AVX-512, mask and AVX2 broadcast instructions Capstone 4 stopped at decode to their lengths") {
  struct Case {
    const char* text;
    Bytes bytes;
    Hazard hazard;  // the same kernel rules as for any VEX/EVEX instruction
  };
  const std::vector<Case> cases = {
      {"kmovq %rax,%k1 (runtime.scanSpanPacked*)", {0xc4, 0xe1, 0xfb, 0x92, 0xc8}, Hazard::None},
      {"kmovq %k0,0x800(%rax) (runtime.asyncPreempt)", {0xc4, 0xe1, 0xf8, 0x91, 0x80, 0x00, 0x08, 0x00, 0x00}, Hazard::None},
      // VEX opcode 90: kernel 6.18 would emulate it as a NOP.
      {"kmovq 0x838(%rax),%k7 (runtime.asyncPreempt)", {0xc4, 0xe1, 0xf8, 0x90, 0xb8, 0x38, 0x08, 0x00, 0x00},
       Hazard::VexRunAsBranch},
      {"vbroadcasti128 0x10(%r8),%ymm14 (chacha20poly1305 AVX2)", {0xc4, 0x42, 0x7d, 0x5a, 0x70, 0x10}, Hazard::None},
      {"vbroadcasti128 0x30(%r8),%ymm4", {0xc4, 0xc2, 0x7d, 0x5a, 0x60, 0x30}, Hazard::None},
      {"vbroadcasti128 (%rax),%ymm0", {0xc4, 0xe2, 0x7d, 0x5a, 0x00}, Hazard::None},
      {"vpclmulhqhqdq %zmm0,%zmm1,%zmm5 (hash/crc32 ieeeCLMUL)", {0x62, 0xf3, 0x75, 0x48, 0x44, 0xe8, 0x11}, Hazard::None},
      {"vpclmullqlqdq %zmm0,%zmm1,%zmm1", {0x62, 0xf3, 0x75, 0x48, 0x44, 0xc8, 0x00}, Hazard::None},
      {"vpternlogd $0x96,%zmm11,%zmm5,%zmm1", {0x62, 0xd3, 0x55, 0x48, 0x25, 0xcb, 0x96}, Hazard::None},
      {"vpermb %zmm4,%zmm0,%zmm0", {0x62, 0xf2, 0x7d, 0x48, 0x8d, 0xc4}, Hazard::None},
      // EVEX opcode ce: OPCODE1 is in the kernel's bad table (into).
      {"vgf2p8affineqb $0x0,%zmm1,%zmm0,%zmm0", {0x62, 0xf3, 0xfd, 0x48, 0xce, 0xc1, 0x00}, Hazard::RefusedOpcode},
      {"vpermi2b %zmm4,%zmm0,%zmm1", {0x62, 0xf2, 0x7d, 0x48, 0x75, 0xcc}, Hazard::VexRunAsBranch},
      {"vpopcntb %zmm1,%zmm3", {0x62, 0xf2, 0x7d, 0x48, 0x54, 0xd9}, Hazard::None},
  };
  Bytes all;
  std::vector<uint64_t> starts;
  for (const Case& c : cases) {
    const std::string text = c.text;
    CAPTURE(text);
    const FunctionCode fn = analyze(cat({c.bytes, {0xc3}}));
    const uint64_t ret = kEntry + c.bytes.size();
    CHECK_FALSE(fn.undecodable.has_value());
    CHECK_FALSE(returnsUnknownReason(fn).has_value());
    CHECK(fn.instructionCount == 2);
    CHECK(fn.returns == std::vector<uint64_t>{ret});
    CHECK(fn.bodyEnd == ret + 1);
    for (uint64_t a = kEntry + 1; a < ret; ++a) CHECK_FALSE(isInstructionBoundary(fn, a));
    CHECK(hazardAt(fn, kEntry) == c.hazard);
    starts.push_back(kEntry + all.size());
    all.insert(all.end(), c.bytes.begin(), c.bytes.end());
  }
  // All of them in one function, then its RET.
  starts.push_back(kEntry + all.size());
  all.push_back(0xc3);
  const FunctionCode fn = analyze(all);
  CHECK(fn.instructionCount == starts.size());
  CHECK(fn.returns == std::vector<uint64_t>{starts.back()});
  for (uint64_t a = kEntry; a < kEntry + all.size(); ++a)
    CHECK(isInstructionBoundary(fn, a) == std::binary_search(starts.begin(), starts.end(), a));
}

TEST_CASE("a function that does not decode to its end has unknown returns, with the reason") {
  SUBCASE("bad bytes after a RET: the RET found is not all there may be") {
    const FunctionCode fn = analyze({0x90, 0xc3, 0x06, 0xc3});  // nop; ret; (06: invalid); ret
    CHECK(fn.returns == std::vector<uint64_t>{kEntry + 1});
    REQUIRE(fn.undecodable == kEntry + 2);
    auto why = returnsUnknownReason(fn);
    REQUIRE(why.has_value());
    CHECK(why->find("returns unknown") == 0);
    CHECK(why->find("0x401002 (entry+2)") != std::string::npos);
    CHECK(why->find("no x86-64 instruction has this encoding") != std::string::npos);
    CHECK(fn.probe.kind == Kind::EmulatedEntry);  // the entry probe itself is fine
  }
  SUBCASE("truncated at the end") {
    const FunctionCode fn = analyze({0xc3, 0x62, 0xf3, 0x75});
    auto why = returnsUnknownReason(fn);
    REQUIRE(why.has_value());
    CHECK(why->find("the function ends inside an instruction") != std::string::npos);
  }
  SUBCASE("decoded to the end, padding included: returns are complete") {
    CHECK_FALSE(returnsUnknownReason(analyze(kSmallFrame)).has_value());
  }
}

TEST_CASE("bad input is a Usage error") {
  CHECK_FALSE(analyzeFunction({}, kEntry).has_value());
  const Bytes one = {0xc3};
  auto r = analyzeFunction(one, ~uint64_t{0});
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == ErrorKind::Usage);
}

TEST_CASE("boundaries cover long functions (bitmap across words)") {
  Bytes code(300, 0x90);  // 300 one-byte nops
  code.push_back(0xc3);
  const FunctionCode fn = analyze(code);
  CHECK(fn.instructionCount == 301);
  for (uint64_t a = kEntry; a <= kEntry + 300; ++a) CHECK(isInstructionBoundary(fn, a));
  CHECK_FALSE(isInstructionBoundary(fn, kEntry + 301));
  CHECK(fn.probe.kind == Kind::EmulatedEntry);
}

TEST_CASE("InsnView: prefixes, REX, escapes, ModRM") {
  // parseInsn keeps a view of the bytes: they must outlive it.
  const Bytes vBytes = {0x49, 0x3b, 0x66, 0x10};
  auto v = x86::parseInsn(vBytes);
  REQUIRE(v);
  CHECK(v->rex == 0x49);
  CHECK(v->opcode == 0x3b);
  auto m = v->modrm();
  REQUIRE(m);
  CHECK(m->reg == x86::RSP);
  CHECK(m->isBaseDisp(x86::R14, 0x10));

  const Bytes fsBytes = {0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff};
  auto fs = x86::parseInsn(fsBytes);
  REQUIRE(fs);
  CHECK(fs->has(x86::kSegFs));
  auto fm = fs->modrm();
  REQUIRE(fm);
  CHECK(fm->reg == x86::R14);
  CHECK_FALSE(fm->base.has_value());
  CHECK(fm->disp == -8);

  const Bytes ripBytes = {0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00};
  auto rip = x86::parseInsn(ripBytes);
  REQUIRE(rip);
  CHECK(rip->modrm()->ripRelative);

  const Bytes vexBytes = {0xc5, 0xf5, 0xeb, 0xc8};
  auto vex = x86::parseInsn(vexBytes);
  REQUIRE(vex);
  CHECK(vex->encoding == x86::Encoding::Vex);
  CHECK(vex->map == x86::OpMap::Map0F);
  CHECK(vex->kernelOpcode1() == 0xeb);

  const Bytes vex3Bytes = {0xc4, 0xe2, 0x7d, 0x00, 0xc1};
  auto vex3 = x86::parseInsn(vex3Bytes);
  REQUIRE(vex3);
  CHECK(vex3->map == x86::OpMap::Map0F38);
  CHECK(vex3->opcode == 0x00);

  const Bytes evexBytes = {0x62, 0xf1, 0x75, 0x48, 0xfe, 0xd0};
  auto evex = x86::parseInsn(evexBytes);
  REQUIRE(evex);
  CHECK(evex->encoding == x86::Encoding::Evex);
  CHECK(evex->opcode == 0xfe);

  const Bytes twoByteBytes = {0x0f, 0x05};
  auto twoByte = x86::parseInsn(twoByteBytes);
  REQUIRE(twoByte);
  CHECK(twoByte->kernelOpcode1() == 0x0f);
  CHECK(twoByte->opcode == 0x05);

  const Bytes prefixesOnly = {0x66, 0x48};
  CHECK_FALSE(x86::parseInsn(prefixesOnly).has_value());
}

TEST_CASE("uprobe verdicts follow kernel 6.18") {
  using E = UprobeExec;
  struct Case {
    Bytes bytes;
    E exec;
    Hazard hazard;
  };
  const std::vector<Case> cases = {
      // emulated
      {{0x90}, E::Emulated, Hazard::None},
      {{0x66, 0x90}, E::Emulated, Hazard::None},
      {{0xf3, 0x90}, E::Emulated, Hazard::None},  // pause: run as a nop, harmless
      {{0x48, 0x90}, E::Emulated, Hazard::None},  // REX.W nop is still a nop
      {{0x0f, 0x1f, 0x44, 0x00, 0x00}, E::Emulated, Hazard::None},
      {{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, E::Emulated, Hazard::None},
      {{0x55}, E::Emulated, Hazard::None},
      {{0x41, 0x57}, E::Emulated, Hazard::None},  // push %r15
      {{0x76, 0x10}, E::Emulated, Hazard::None},
      {{0x0f, 0x86, 0, 1, 0, 0}, E::Emulated, Hazard::None},
      {{0xeb, 0xfe}, E::Emulated, Hazard::None},
      {{0xe8, 0, 0, 0, 0}, E::Emulated, Hazard::None},
      // stepped, fine
      {{0x49, 0x3b, 0x66, 0x10}, E::Stepped, Hazard::None},
      {{0xc3}, E::Stepped, Hazard::None},
      {{0x0f, 0x0b}, E::Stepped, Hazard::None},  // ud2: 0x0f passes the 1-byte table
      {{0x48, 0x50}, E::Stepped, Hazard::None},  // REX.W push: not emulated
      {{0x48, 0xff, 0x05, 0, 0, 0, 0}, E::Stepped, Hazard::None},  // rip-relative incq
      {{0xc5, 0xfe, 0x7e, 0x00}, E::Emulated, Hazard::VexRunAsBranch},  // vmovq load: opcode 7e
      {{0xc5, 0xfe, 0x10, 0x00}, E::Stepped, Hazard::None},            // vmovss: opcode 10 is fine
      // refused
      {{0xcc}, E::Refused, Hazard::Int3},
      {{0xcd, 0x03}, E::Refused, Hazard::Int3},
      {{0xcd, 0x80}, E::Refused, Hazard::RefusedOpcode},
      {{0xf4}, E::Refused, Hazard::RefusedOpcode},
      {{0xc5, 0xfe, 0x6f, 0x00}, E::Refused, Hazard::RefusedOpcode},  // vmovdqu load
      {{0xc5, 0xfd, 0xef, 0xc0}, E::Refused, Hazard::RefusedOpcode},  // vpxor
      {{0xf0, 0x48, 0x83, 0x00, 0x01}, E::Refused, Hazard::RefusedPrefix},
      {{0x2e, 0x66, 0x0f, 0x1f, 0x04, 0x00}, E::Refused, Hazard::RefusedPrefix},  // cs nopw
      {{0x66, 0xe8, 0, 0}, E::Refused, Hazard::Refused66Branch},
      {{0x66, 0x76, 0x10}, E::Refused, Hazard::Refused66Branch},
      {{0x8e, 0xd0}, E::Refused, Hazard::RefusedMovSs},
      {{0x8f, 0xe8, 0x78, 0xa2, 0xc1, 0x00}, E::Refused, Hazard::XopEncoding},
      // accepted, but the target breaks
      {{0x49, 0x90}, E::Emulated, Hazard::XchgRunAsNop},
      {{0x41, 0x90}, E::Emulated, Hazard::XchgRunAsNop},
      {{0xc5, 0xf5, 0xeb, 0xc8}, E::Emulated, Hazard::VexRunAsBranch},  // vpor
      {{0xc5, 0xfe, 0x7f, 0x00}, E::Emulated, Hazard::VexRunAsBranch},  // vmovdqu store
      {{0xc5, 0xf5, 0x74, 0xc8}, E::Emulated, Hazard::VexRunAsBranch},  // vpcmpeqb
      {{0xc5, 0xf8, 0x77}, E::Emulated, Hazard::VexRunAsBranch},        // vzeroupper
      {{0x62, 0xf1, 0xfe, 0x48, 0x7f, 0x00}, E::Emulated, Hazard::VexRunAsBranch},  // EVEX vmovdqu64 store
      {{0x9c}, E::Stepped, Hazard::PushfLeaksTrapFlag},
      {{0x0f, 0x05}, E::Stepped, Hazard::SyscallStepped},
  };
  for (const auto& c : cases) {
    const std::string bytes = hexBytes(c.bytes);
    CAPTURE(bytes);
    const UprobeVerdict v = verdict(c.bytes);
    CHECK(v.exec == c.exec);
    CHECK(v.hazard == c.hazard);
    CHECK(v.safe() == (c.hazard == Hazard::None));
    CHECK_FALSE(describe(c.hazard).empty());
  }
}

TEST_CASE("chooseProbeSite: pure decision") {
  GoPrologue withCheck;
  withCheck.form = GoPrologue::Form::Small;
  withCheck.stackCheckBranch = kEntry + 4;
  const UprobeVerdict stepped{UprobeExec::Stepped, Hazard::None};
  const UprobeVerdict emulated{UprobeExec::Emulated, Hazard::None};
  const UprobeVerdict corrupt{UprobeExec::Emulated, Hazard::XchgRunAsNop};

  auto s = chooseProbeSite(kEntry, withCheck, stepped, emulated);
  CHECK(s.kind == Kind::StackCheckBranch);
  CHECK(s.address == kEntry + 4);
  // A branch that is not emulated (or unsafe) falls back to the entry.
  CHECK(chooseProbeSite(kEntry, withCheck, stepped, stepped).kind == Kind::SteppedEntry);
  CHECK(chooseProbeSite(kEntry, withCheck, stepped, std::nullopt).kind == Kind::SteppedEntry);

  GoPrologue none;
  CHECK(chooseProbeSite(kEntry, none, emulated, std::nullopt).kind == Kind::EmulatedEntry);
  CHECK(chooseProbeSite(kEntry, none, stepped, std::nullopt).kind == Kind::SteppedEntry);
  auto bad = chooseProbeSite(kEntry, none, corrupt, std::nullopt);
  CHECK(bad.kind == Kind::None);
  CHECK(bad.reason == describe(Hazard::XchgRunAsNop));
  CHECK(chooseProbeSite(kEntry, none, std::nullopt, std::nullopt).kind == Kind::None);
  CHECK(kindName(Kind::StackCheckBranch) == "stack-check-branch");
}

TEST_CASE("recognisePrologue on decoded instructions, without a decoder library") {
  const Bytes cmp = {0x49, 0x3b, 0x66, 0x10}, jbe = {0x76, 0x10}, sub = {0x48, 0x83, 0xec, 0x18};
  const DecodedInsn head[] = {{kEntry, cmp}, {kEntry + 4, jbe}, {kEntry + 6, sub}};
  const GoPrologue p = recognisePrologue(head, kEntry);
  CHECK(p.form == GoPrologue::Form::Small);
  CHECK(p.stackCheckBranch == kEntry + 4);
  CHECK(p.morestackTarget == kEntry + 6 + 0x10);
  CHECK(p.frameSize == 0x18);
  CHECK(p.bodyStart == kEntry + 10);

  // A compare without the jbe is not a stack check.
  const DecodedInsn cmpOnly[] = {{kEntry, cmp}, {kEntry + 4, sub}};
  CHECK(recognisePrologue(cmpOnly, kEntry).form == GoPrologue::Form::None);
  // Nor is a TLS g load with a compare but no jbe: the body starts at the entry.
  const Bytes gload = {0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff};
  const DecodedInsn gCmp[] = {{kEntry, gload}, {kEntry + 9, cmp}, {kEntry + 13, sub}};
  const GoPrologue noJbe = recognisePrologue(gCmp, kEntry);
  CHECK(noJbe.form == GoPrologue::Form::None);
  CHECK_FALSE(noJbe.loadsGFromTls);
  CHECK(noJbe.bodyStart == kEntry);
  // A compare of some other register is not either.
  const Bytes cmpRax = {0x49, 0x3b, 0x46, 0x10};  // cmp 0x10(%r14),%rax
  const DecodedInsn other[] = {{kEntry, cmpRax}, {kEntry + 4, jbe}};
  CHECK(recognisePrologue(other, kEntry).form == GoPrologue::Form::None);
  CHECK(recognisePrologue({}, kEntry).bodyStart == kEntry);
}

TEST_CASE("an entry-only decode stops once the stack check is decided, and chooses what the whole sweep does") {
  // Every prologue shape of this file, and shapes that start like one and
  // are not (a g load with no compare; a compare of another register; a
  // huge frame's first instruction alone).
  const Bytes cmpRax = cat({{0x49, 0x3b, 0x46, 0x10}, {0x76, 0x01}, {0xc3}, {0xcc}});
  const Bytes movRspOnly = cat({{0x49, 0x89, 0xe4}, {0x90}, {0x90}, {0x90}, {0xc3}});
  struct Case {
    const char* name;
    const Bytes* code;
    size_t headInstructions;  // what the entry-only decode reads
  };
  const Case cases[] = {{"small", &kSmallFrame, 2}, {"large", &kLargeFrame, 3}, {"huge", &kHugeFrame, 5},
                        {"tls", &kTlsG, 3},           {"pie", &kPieG, 4},          {"wrapper", &kGWrapper, 2},
                        {"cmp rax", &cmpRax, 1},      {"mov rsp", &movRspOnly, 2}, {"leaf", &kLeaf, 1},
                        {"push rbp", &kFrame121, 1}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    auto head = analyzeFunction(*c.code, kEntry, DecodeDepth::EntryOnly);
    auto whole = analyzeFunction(*c.code, kEntry, DecodeDepth::Whole);
    REQUIRE(head.has_value());
    REQUIRE(whole.has_value());
    CHECK(head->instructionCount == c.headInstructions);
    CHECK(head->probe.kind == whole->probe.kind);
    CHECK(head->probe.address == whole->probe.address);
    CHECK(head->probe.reason == whole->probe.reason);
    CHECK(head->prologue == whole->prologue);
    CHECK(head->stackCheckBranch == whole->stackCheckBranch);
    CHECK(head->morestackTarget == whole->morestackTarget);
    CHECK(returnsUnknownReason(*head).has_value());

    // Every head the matcher calls decided agrees with the whole function's.
    std::vector<DecodedInsn> insns;
    for (uint64_t a = kEntry; a < whole->bodyEnd; a++)
      if (isInstructionBoundary(*whole, a)) insns.push_back({a, {}});
    for (size_t k = 0; k < insns.size(); k++) {
      const uint64_t next = k + 1 < insns.size() ? insns[k + 1].address : whole->bodyEnd;
      insns[k].bytes = std::span<const uint8_t>(c.code->data() + (insns[k].address - kEntry), next - insns[k].address);
    }
    const GoPrologue full = recognisePrologue(insns, kEntry);
    for (size_t m = 0; m <= insns.size(); m++) {
      CAPTURE(m);
      const GoPrologue p = recognisePrologue(std::span(insns).first(m), kEntry);
      if (!p.stackCheckDecided) continue;
      CHECK(p.form == full.form);
      CHECK(p.stackCheckBranch == full.stackCheckBranch);
      CHECK(p.morestackTarget == full.morestackTarget);
      CHECK(p.loadsGFromTls == full.loadsGFromTls);
    }
  }
}
