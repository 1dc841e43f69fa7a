// Encoding probe configurations and capture steps for the BPF program, and
// decoding the events it writes: pure logic, no kernel.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "backend/bpf/event.hpp"
#include "backend/bpf/probe_config.hpp"

using namespace goscope;
using namespace goscope::bpf;

TEST_CASE("bpf config: cookies carry the probe id and the site kind") {
  uint64_t c = cookieFor(12345, SiteKind::EntryStackCheck);
  CHECK(GS_COOKIE_PROBE(c) == 12345);
  CHECK(GS_COOKIE_SITE(c) == GS_SITE_ENTRY_STACKCHECK);
  CHECK(GS_COOKIE_PROBE(cookieFor(0xFFFFFF, SiteKind::Return)) == 0xFFFFFF);
  CHECK(GS_COOKIE_SITE(cookieFor(0, SiteKind::Return)) == GS_SITE_RETURN);
  CHECK(std::string(siteKindName(SiteKind::Entry)) == "entry");
}

TEST_CASE("bpf config: the Go ABI registers, in order") {
  const char* want[] = {"RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11"};
  for (unsigned i = 0; i < 9; i++) {
    auto r = goAbiIntReg(i);
    REQUIRE(r.has_value());
    CHECK(std::string(regName(*r)) == want[i]);
  }
  CHECK_FALSE(goAbiIntReg(9).has_value());
}

TEST_CASE("bpf config: capture steps encode, and bad ones are usage errors") {
  auto s = encodeRead(MemRead::stringInRegs(Reg::RCX, Reg::RDI, 100));
  REQUIRE(s.has_value());
  CHECK(s->base == GS_REG_RCX);
  CHECK(s->len_src == GS_LEN_REG);
  CHECK(s->len_reg == GS_REG_RDI);
  CHECK(s->len == 1);
  CHECK(s->max_len == 100);
  CHECK(s->flags == 0);

  auto f = encodeRead(MemRead::stringAt(Reg::RAX, 16));
  REQUIRE(f.has_value());
  CHECK(f->flags == GS_READ_DEREF);
  CHECK(f->len_src == GS_LEN_MEM);
  CHECK(f->off == 16);

  auto a = encodeRead(MemRead::absolute(0x55d0c7a9b000ull, 8));
  REQUIRE(a.has_value());
  CHECK(a->base == GS_REG_ABS);
  CHECK(static_cast<uint64_t>(a->off) == 0x55d0c7a9b000ull);  // 64-bit: PIE addresses fit

  auto st = encodeRead(MemRead::at(Reg::RSP, 8, 64));
  REQUIRE(st.has_value());
  CHECK(st->base == GS_REG_RSP);
  CHECK(st->len == 64);

  MemRead tooBig = MemRead::stringInRegs(Reg::RAX, Reg::RBX, GS_MAX_READ + 1);
  auto e1 = encodeRead(tooBig);
  REQUIRE_FALSE(e1.has_value());
  CHECK(e1.error().kind == ErrorKind::Usage);
  auto e2 = encodeRead(MemRead::stringInRegs(Reg::RAX, Reg::RSP));
  REQUIRE_FALSE(e2.has_value());
  CHECK(e2.error().message.find("RSP") != std::string::npos);
  std::vector<MemRead> nine(GS_MAX_STEPS + 1, MemRead::at(Reg::RAX, 0, 8));
  CHECK_FALSE(encodeSpec(nine).has_value());
  std::vector<MemRead> eight(GS_MAX_STEPS, MemRead::at(Reg::RAX, 0, 8));
  auto spec = encodeSpec(eight);
  REQUIRE(spec.has_value());
  CHECK(spec->nsteps == GS_MAX_STEPS);
}

TEST_CASE("bpf config: actions") {
  CHECK(encodeActions({}) == 0);
  CHECK(encodeActions({.count = true}) == GS_ACT_COUNT);
  ProbeConfig c{.latency = true, .eventAtReturn = true, .userStack = true};
  c.readGlobal = GlobalRead{0x5805e0, 8};
  CHECK(encodeActions(c) == (GS_ACT_LATENCY | GS_ACT_EVENT_RETURN | GS_ACT_USER_STACK | GS_ACT_READ_GLOBAL));
}

namespace {
struct RecordBuilder {
  std::vector<uint8_t> bytes;
  gs_event h{};
  RecordBuilder() { bytes.resize(sizeof(gs_event)); }
  void block(const std::string& data, uint32_t fullLen, int16_t err = 0) {
    gs_block b{fullLen, static_cast<uint16_t>(data.size()), err};
    size_t pos = bytes.size();
    bytes.resize(pos + sizeof b + ((data.size() + 7) & ~size_t(7)), 0);
    std::memcpy(bytes.data() + pos, &b, sizeof b);
    std::memcpy(bytes.data() + pos + sizeof b, data.data(), data.size());
    h.nblocks++;
  }
  void stack(std::vector<uint64_t> frames) {
    size_t pos = bytes.size();
    bytes.resize(pos + frames.size() * 8);
    std::memcpy(bytes.data() + pos, frames.data(), frames.size() * 8);
    h.stack_bytes = static_cast<uint16_t>(frames.size() * 8);
  }
  std::vector<uint8_t> finish() {
    h.size = static_cast<uint32_t>(bytes.size());
    std::memcpy(bytes.data(), &h, sizeof h);
    return bytes;
  }
};
}  // namespace

TEST_CASE("bpf events: decode header, blocks, stack with the caller inserted") {
  RecordBuilder r;
  r.h.ts_ns = 123;
  r.h.pid = 10;
  r.h.tid = 11;
  r.h.goid = 7;
  r.h.g = 0xc000001000;
  r.h.probe_id = 42;
  r.h.site = GS_SITE_RETURN;
  r.h.ip = 0x48c043;
  r.h.ret_addr = 0x48c200;
  r.h.duration_ns = 555;
  r.h.regs[GS_REG_RAX] = 55;
  r.h.sp = 0xc000050000;
  r.block("gopher", 6);
  r.block("goscope ", 31);
  r.block("", 8, -14);
  r.stack({0x48c043, 0x433000, 0x460000, 0});
  auto bytes = r.finish();
  auto e = decodeEvent(bytes);
  REQUIRE(e.has_value());
  CHECK(e->tsNs == 123);
  CHECK(e->pid == 10);
  CHECK(e->tid == 11);
  CHECK(e->goid == 7);
  CHECK(e->probeId == 42);
  CHECK(e->isReturn());
  CHECK(e->durationNs == 555);
  CHECK(e->reg(Reg::RAX) == 55);
  CHECK(e->reg(Reg::RSP) == 0xc000050000);
  REQUIRE(e->blocks.size() == 3);
  CHECK(std::string(e->blocks[0].bytes.begin(), e->blocks[0].bytes.end()) == "gopher");
  CHECK_FALSE(e->blocks[0].truncated());
  CHECK(e->blocks[1].truncated());
  CHECK(e->blocks[1].fullLen == 31);
  CHECK(e->blocks[2].errnoValue == 14);
  CHECK(e->blocks[2].bytes.empty());
  CHECK(e->stack == std::vector<uint64_t>{0x48c043, 0x48c200, 0x433000, 0x460000});
}

TEST_CASE("bpf events: malformed records are errors, not crashes") {
  std::vector<uint8_t> tiny(10, 0);
  CHECK_FALSE(decodeEvent(tiny).has_value());
  RecordBuilder r;
  r.block("abc", 3);
  auto bytes = r.finish();
  bytes.resize(bytes.size() - 8);  // cut the block's data
  gs_event h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.size = static_cast<uint32_t>(bytes.size());
  std::memcpy(bytes.data(), &h, sizeof h);
  CHECK_FALSE(decodeEvent(bytes).has_value());
  RecordBuilder bad;
  bad.h.site = 9;
  auto b2 = bad.finish();
  CHECK_FALSE(decodeEvent(b2).has_value());
}

TEST_CASE("bpf events: completing a stack") {
  CHECK(completeStack(std::vector<uint64_t>{}, 0).empty());
  CHECK(completeStack(std::vector<uint64_t>{}, 5) == std::vector<uint64_t>{5});
  CHECK(completeStack(std::vector<uint64_t>{1, 2, 0, 9}, 7) == std::vector<uint64_t>{1, 7, 2});
  CHECK(completeStack(std::vector<uint64_t>{1, 2}, 0) == std::vector<uint64_t>{1, 2});
}

#include "backend/bpf/uprobe_hazards.hpp"

TEST_CASE("bpf hazards: instructions uprobes refuse or break") {
  auto hz = [](std::vector<uint8_t> b) { return uprobeHazard(b); };
  // Go prologues and ordinary first instructions: fine.
  CHECK(hz({0x49, 0x3b, 0x66, 0x10}).empty());        // cmp 0x10(%r14),%rsp
  CHECK(hz({0x76, 0x4f}).empty());                    // jbe
  CHECK(hz({0xc3}).empty());                          // ret
  CHECK(hz({0x48, 0x01, 0xd8}).empty());              // add %rbx,%rax
  CHECK(hz({0x90}).empty());                          // nop
  CHECK(hz({0x48, 0x90}).empty());                    // REX.W nop: no B bit
  CHECK(hz({0x64, 0x48, 0x8b, 0x1c, 0x25}).empty());  // mov %fs:..., FS is fine
  CHECK(hz({0x66, 0x90}).empty());                    // xchg %ax,%ax (nop)
  CHECK(hz({}).empty());
  // Refused or broken.
  CHECK(hz({0xcc}).find("int3") != std::string::npos);
  CHECK(hz({0xcd, 0x03}).find("int $3") != std::string::npos);
  CHECK(hz({0xf0, 0x20, 0x18}).find("lock") != std::string::npos);        // lock and %bl,(%rax)
  CHECK(hz({0x66, 0xf0, 0x0f, 0xb1}).find("lock") != std::string::npos);  // prefix after a prefix
  CHECK(hz({0x2e, 0x8b, 0x00}).find("segment") != std::string::npos);
  CHECK(hz({0x49, 0x90}).find("NOP") != std::string::npos);  // runtime.gcWriteBarrierR8
  CHECK(hz({0x41, 0x90}).find("NOP") != std::string::npos);
  CHECK(hz({0x4d, 0x90}).find("NOP") != std::string::npos);
}
