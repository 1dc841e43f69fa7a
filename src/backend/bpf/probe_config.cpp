#include "backend/bpf/probe_config.hpp"

namespace goscope::bpf {

const char* siteKindName(SiteKind k) {
  switch (k) {
    case SiteKind::Entry: return "entry";
    case SiteKind::EntryStackCheck: return "entry-stackcheck";
    case SiteKind::Return: return "return";
    case SiteKind::Inlined: return "inlined";
    case SiteKind::InlinedFrameless: return "inlined-frameless";
    case SiteKind::Call: return "call";
    case SiteKind::CallReturn: return "call-return";
    case SiteKind::EntryMarked: return "entry-marked";
    case SiteKind::MorestackMark: return "morestack-mark";
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
  if (!c.filter.empty()) a |= GS_ACT_FILTER;
  if (!c.filter.empty() && c.countMatching) a |= GS_ACT_COUNT_MATCHING;
  return a;
}

Result<gs_filter> encodeFilter(const std::vector<BoundFilterTerm>& terms) {
  gs_filter f{};
  if (terms.empty() || terms.size() > GS_MAX_FILTER_CONDS)
    return fail(ErrorKind::Usage, "filter: " + std::to_string(terms.size()) + " comparisons; the kernel tests 1 to " +
                                      std::to_string(GS_MAX_FILTER_CONDS));
  for (size_t i = 0; i < terms.size(); i++) {
    const BoundFilterTerm& t = terms[i];
    gs_filter_cond& c = f.conds[i];
    switch (t.kind) {
      case BoundFilterTerm::Kind::Signed: c.kind = GS_FK_SIGNED; break;
      case BoundFilterTerm::Kind::Unsigned: c.kind = GS_FK_UNSIGNED; break;
      case BoundFilterTerm::Kind::String: c.kind = GS_FK_STRING; break;
    }
    switch (t.op) {
      case FilterOp::Eq: c.op = GS_OP_EQ; break;
      case FilterOp::Ne: c.op = GS_OP_NE; break;
      case FilterOp::Lt: c.op = GS_OP_LT; break;
      case FilterOp::Le: c.op = GS_OP_LE; break;
      case FilterOp::Gt: c.op = GS_OP_GT; break;
      case FilterOp::Ge: c.op = GS_OP_GE; break;
      case FilterOp::Prefix: c.op = GS_OP_PREFIX; break;
    }
    if (t.onStack) {
      c.base = GS_REG_RSP;
      c.off = static_cast<__s32>(t.stackOffset);
    } else {
      if (t.reg >= GS_NREGS || (t.kind == BoundFilterTerm::Kind::String && t.lenReg >= GS_NREGS))
        return fail(ErrorKind::Usage, "filter: argument register " + std::to_string(t.reg) + " is not one of RAX..R11");
      c.base = static_cast<__u8>(t.reg);
      c.len_reg = static_cast<__u8>(t.lenReg);
    }
    if (t.kind == BoundFilterTerm::Kind::String) {
      if (t.text.size() > GS_FILTER_STR)
        return fail(ErrorKind::Usage, "filter: a string constant of " + std::to_string(t.text.size()) +
                                          " bytes; the kernel compares at most " + std::to_string(GS_FILTER_STR));
      c.str_len = static_cast<__u8>(t.text.size());
      for (size_t j = 0; j < t.text.size(); j++) c.str[j] = static_cast<__u8>(t.text[j]);
    } else {
      if (t.size != 1 && t.size != 2 && t.size != 4 && t.size != 8)
        return fail(ErrorKind::Usage, "filter: an integer of " + std::to_string(t.size) + " bytes");
      c.size = static_cast<__u8>(t.size);
      c.value = t.value;
    }
  }
  f.nconds = static_cast<__u32>(terms.size());
  return f;
}

uint64_t cookieFor(uint32_t probeId, SiteKind site, uint8_t generation) {
  return GS_COOKIE(probeId, static_cast<uint8_t>(site) | (generation ? GS_SITE_GEN_BIT : 0));
}

}  // namespace goscope::bpf
