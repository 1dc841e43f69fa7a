#include "backend/bpf/probe_config.hpp"

namespace goscope::bpf {

const char* siteKindName(SiteKind k) {
  switch (k) {
    case SiteKind::Entry: return "entry";
    case SiteKind::EntryStackCheck: return "entry-stackcheck";
    case SiteKind::Return: return "return";
    case SiteKind::Inlined: return "inlined";
    case SiteKind::InlinedFrameless: return "inlined-frameless";
  }
  return "?";
}

const char* regName(Reg r) {
  switch (r) {
    case Reg::RAX: return "RAX";
    case Reg::RBX: return "RBX";
    case Reg::RCX: return "RCX";
    case Reg::RDI: return "RDI";
    case Reg::RSI: return "RSI";
    case Reg::R8: return "R8";
    case Reg::R9: return "R9";
    case Reg::R10: return "R10";
    case Reg::R11: return "R11";
    case Reg::RSP: return "RSP";
    case Reg::Absolute: return "ABS";
  }
  return "?";
}

std::optional<Reg> goAbiIntReg(unsigned n) {
  if (n >= GS_NREGS) return std::nullopt;
  return static_cast<Reg>(n);
}

MemRead MemRead::stringInRegs(Reg ptr, Reg len, uint16_t maxLen) {
  MemRead r;
  r.base = ptr;
  r.lenFrom = LenFrom::Register;
  r.lenReg = len;
  r.len = 1;
  r.maxLen = maxLen;
  return r;
}

MemRead MemRead::sliceInRegs(Reg ptr, Reg len, uint16_t elemSize, uint16_t maxLen) {
  MemRead r = stringInRegs(ptr, len, maxLen);
  r.len = elemSize;
  return r;
}

MemRead MemRead::at(Reg base, int64_t offset, uint16_t size) {
  MemRead r;
  r.base = base;
  r.offset = offset;
  r.len = size;
  r.maxLen = size;
  return r;
}

MemRead MemRead::stringAt(Reg base, int64_t offset, uint16_t maxLen) {
  MemRead r;
  r.base = base;
  r.offset = offset;
  r.deref = true;
  r.lenFrom = LenFrom::Memory;
  r.len = 1;
  r.maxLen = maxLen;
  return r;
}

MemRead MemRead::absolute(uint64_t address, uint16_t size) {
  MemRead r = at(Reg::Absolute, static_cast<int64_t>(address), size);
  return r;
}

Result<gs_read_step> encodeRead(const MemRead& r) {
  gs_read_step s{};
  auto base = static_cast<unsigned>(r.base);
  if (base >= GS_REG_COUNT) return fail(ErrorKind::Usage, "capture: unknown base register " + std::to_string(base));
  if (r.maxLen == 0 || r.maxLen > GS_MAX_READ)
    return fail(ErrorKind::Usage, "capture: read cap " + std::to_string(r.maxLen) + " bytes is outside 1.." +
                                      std::to_string(GS_MAX_READ));
  if (r.lenFrom == MemRead::LenFrom::Register && static_cast<unsigned>(r.lenReg) >= GS_NREGS)
    return fail(ErrorKind::Usage, std::string("capture: a length can only come from RAX..R11, not ") +
                                      regName(r.lenReg));
  if (r.len == 0) return fail(ErrorKind::Usage, "capture: zero length/element size");
  s.base = static_cast<__u8>(base);
  s.flags = r.deref ? GS_READ_DEREF : 0;
  s.len_src = static_cast<__u8>(r.lenFrom);
  s.len_reg = static_cast<__u8>(r.lenReg);
  s.off = r.offset;
  s.deref_off = r.derefOffset;
  s.len = r.len;
  s.max_len = r.maxLen;
  return s;
}

Result<gs_capture_spec> encodeSpec(const std::vector<MemRead>& reads) {
  gs_capture_spec spec{};
  if (reads.size() > GS_MAX_STEPS)
    return fail(ErrorKind::Usage, "capture: " + std::to_string(reads.size()) + " memory reads at one site, at most " +
                                      std::to_string(GS_MAX_STEPS));
  for (size_t i = 0; i < reads.size(); i++) {
    auto s = encodeRead(reads[i]);
    if (!s) return s.failure();
    spec.steps[i] = *s;
  }
  spec.nsteps = static_cast<__u32>(reads.size());
  return spec;
}

uint32_t encodeActions(const ProbeConfig& c) {
  uint32_t a = 0;
  if (c.count) a |= GS_ACT_COUNT;
  if (c.latency) a |= GS_ACT_LATENCY;
  if (c.eventAtEntry) a |= GS_ACT_EVENT_ENTRY;
  if (c.eventAtReturn) a |= GS_ACT_EVENT_RETURN;
  if (c.userStack) a |= GS_ACT_USER_STACK;
  if (c.stackCounts) a |= GS_ACT_STACK_COUNT;
  if (c.readGlobal) a |= GS_ACT_READ_GLOBAL;
  return a;
}

uint64_t cookieFor(uint32_t probeId, SiteKind site, uint8_t generation) {
  return GS_COOKIE(probeId, static_cast<uint8_t>(site) | (generation ? GS_SITE_GEN_BIT : 0));
}

}  // namespace goscope::bpf
