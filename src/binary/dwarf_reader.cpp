#include "binary/dwarf_reader.hpp"

#include <libelf.h>

#include <cstring>

#include <dwarf.h>

#include <algorithm>

namespace goscope {

DwarfReader::DwarfReader(Dwarf* dbg, DwarfInfo& out) : dbg_(dbg), out_(out) {
  // Every section's data as libdw sees it (decompressed in place by
  // elf_compress when it was compressed).
  Elf* elf = dwarf_getelf(dbg);
  for (Elf_Scn* scn = elf ? elf_nextscn(elf, nullptr) : nullptr; scn; scn = elf_nextscn(elf, scn))
    for (Elf_Data* d = elf_getdata(scn, nullptr); d; d = elf_getdata(scn, d))
      if (d->d_buf && d->d_size)
        sections_.emplace_back(static_cast<const char*>(d->d_buf), static_cast<const char*>(d->d_buf) + d->d_size);
}

const char* DwarfReader::formString(Dwarf_Attribute* a) const {
  const char* s = dwarf_formstring(a);
  if (!s) return nullptr;
  for (const auto& [begin, end] : sections_)
    if (s >= begin && s < end) return std::memchr(s, 0, static_cast<size_t>(end - s)) ? s : nullptr;
  return nullptr;  // not in any section we know: not trusted
}

const char* DwarfReader::dieName(Dwarf_Die* die) const {
  Dwarf_Attribute a;
  return dwarf_attr_integrate(die, DW_AT_name, &a) ? formString(&a) : nullptr;
}

namespace {

// A single location expression: Go writes DW_FORM_block1 even in DWARF 4
// units, where libdw's dwarf_getlocation only accepts exprloc, so the bytes
// are parsed here. False when the attribute is not a block (a location list).
bool expression(Dwarf_Attribute* a, std::vector<DwarfOp>& ops) {
  switch (dwarf_whatform(a)) {
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4:
    case DW_FORM_block:
    case DW_FORM_exprloc: {
      Dwarf_Block b;
      if (dwarf_formblock(a, &b) != 0) return false;
      ops = parseExpression({b.data, b.length});
      return true;
    }
    default: return false;
  }
}

// Every Go function's frame base is DW_OP_call_frame_cfa; anything else (C
// code in a cgo binary) makes fbreg offsets unusable as CFA offsets.
bool frameBaseIsCfa(Dwarf_Die* fn) {
  Dwarf_Attribute a;
  std::vector<DwarfOp> ops;
  if (!dwarf_attr(fn, DW_AT_frame_base, &a) || !expression(&a, ops)) return false;
  return ops.size() == 1 && ops[0].atom == DW_OP_call_frame_cfa;
}

// The smallest decl_line among the parameters (0 if none has one).
int firstParamLine(Dwarf_Die* fn) {
  int best = 0;
  Dwarf_Die child;
  if (dwarf_child(fn, &child) != 0) return 0;
  do {
    int line = 0;
    if (dwarf_tag(&child) == DW_TAG_formal_parameter && dwarf_decl_line(&child, &line) == 0 && line > 0 &&
        (best == 0 || line < best))
      best = line;
  } while (dwarf_siblingof(&child, &child) == 0);
  return best;
}

}  // namespace

Result<void> DwarfReader::run() {
  Dwarf_Off off = 0, next = 0;
  size_t hsize = 0;
  while (dwarf_nextcu(dbg_, off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    if (dwarf_offdie(dbg_, off + hsize, &cu)) readUnit(&cu);
    off = next;
  }
  if (out_.functions_.empty() && typeCandidates_.empty())
    return fail(ErrorKind::BadTarget, "DWARF has no Go compile units",
                "is this a Go program? goscope reads DWARF only from Go compile units");
  finishFunctions();
  finishTypes();
  return {};
}

Result<void> DwarfReader::runGlobals(const std::vector<std::string>& names) {
  Dwarf_Off off = 0, next = 0;
  size_t hsize = 0;
  bool goUnits = false;
  recordRuntimeTypes_ = true;
  while (dwarf_nextcu(dbg_, off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    if (dwarf_offdie(dbg_, off + hsize, &cu)) goUnits = readUnitGlobals(&cu, names) || goUnits;
    off = next;
  }
  if (!goUnits)
    return fail(ErrorKind::BadTarget, "DWARF has no Go compile units",
                "is this a Go program? goscope reads DWARF only from Go compile units");
  std::vector<std::string> roots;
  for (const auto& v : out_.variables_) roots.push_back(v.type);
  // A type asked for by name (an interface's dynamic type, found by its
  // runtime type offset) is built with every type it reaches.
  for (const auto& n : names)
    if (typeCandidates_.count(n)) roots.push_back(n);
  finishTypesReachedFrom(std::move(roots));
  return {};
}

namespace {

// `name` is `asked`, or ends in "/" + asked (a package path's last element).
bool namesAsked(std::string_view name, const std::string& asked) {
  if (name.size() == asked.size()) return name == asked;
  return name.size() > asked.size() && name.ends_with(asked) && name[name.size() - asked.size() - 1] == '/';
}

}  // namespace

// The same top-level DIEs readUnit looks at, but a subprogram is only
// named (dwarf_siblingof skips its children unread) and a variable is read
// only when asked for: no parameters, location lists or line tables.
bool DwarfReader::readUnitGlobals(Dwarf_Die* cu, const std::vector<std::string>& asked) {
  if (dwarf_srclang(cu) != DW_LANG_Go) return false;
  if (out_.producer_.empty()) {
    Dwarf_Attribute a;
    if (dwarf_attr(cu, DW_AT_producer, &a))
      if (const char* p = formString(&a)) out_.producer_ = p;
  }
  Dwarf_Die child;
  if (dwarf_child(cu, &child) != 0) return true;
  do {
    const int tag = dwarf_tag(&child);
    switch (tag) {
      case DW_TAG_base_type:
      case DW_TAG_structure_type:
      case DW_TAG_pointer_type:
      case DW_TAG_typedef:
      case DW_TAG_array_type:
      case DW_TAG_subroutine_type:
      case DW_TAG_unspecified_type: noteType(&child); break;
      case DW_TAG_variable:
      case DW_TAG_constant:
      case DW_TAG_subprogram: break;
      default: continue;
    }
    // An out-of-line copy of an inlined function has no name of its own:
    // its abstract DIE, also top-level, is named.
    const char* n = dieName(&child);
    if (!n) continue;
    const std::string_view name(n);
    for (const auto& a : asked) {
      if (!namesAsked(name, a)) continue;
      out_.declared_.insert(a);
      if (tag == DW_TAG_variable && name == a && !out_.variable(a)) readVariable(&child);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return true;
}

void DwarfReader::readUnit(Dwarf_Die* cu) {
  // Only Go units: a cgo binary also has C units whose types reuse Go's names
  // with other meanings (C's `int` is 4 bytes).
  if (dwarf_srclang(cu) != DW_LANG_Go) return;
  if (out_.producer_.empty()) {
    Dwarf_Attribute a;
    if (dwarf_attr(cu, DW_AT_producer, &a))
      if (const char* p = formString(&a)) out_.producer_ = p;
  }
  Dwarf_Die child;
  if (dwarf_child(cu, &child) != 0) return;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram: readSubprogram(cu, &child); break;
      case DW_TAG_variable: readVariable(&child); break;
      case DW_TAG_base_type:
      case DW_TAG_structure_type:
      case DW_TAG_pointer_type:
      case DW_TAG_typedef:
      case DW_TAG_array_type:
      case DW_TAG_subroutine_type:
      case DW_TAG_unspecified_type: noteType(&child); break;
      default: break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

DwarfParam DwarfReader::readParam(Dwarf_Die* die) {
  DwarfParam p;
  if (const char* n = dieName(die)) p.name = n;
  p.isResult = flagAttr(die, DW_AT_variable_parameter);
  p.type = typeNameOf(die);
  p.typeSize = typeSizeOf(die);
  return p;
}

// Parameters of `die` in DIE order; originOf receives each one's DIE offset
// (used to match an out-of-line copy's parameters to its abstract origin).
void DwarfReader::readParams(Dwarf_Die* die, std::vector<DwarfParam>& params, std::vector<Dwarf_Off>* originOf) {
  Dwarf_Die child;
  if (dwarf_child(die, &child) != 0) return;
  do {
    if (dwarf_tag(&child) != DW_TAG_formal_parameter) continue;
    params.push_back(readParam(&child));
    if (originOf) originOf->push_back(dwarf_dieoffset(&child));
  } while (dwarf_siblingof(&child, &child) == 0);
}

std::vector<LocationRange> DwarfReader::readLocations(Dwarf_Die* die, bool fbCfa) {
  std::vector<LocationRange> out;
  Dwarf_Attribute a;
  if (!dwarf_attr(die, DW_AT_location, &a)) return out;
  // An empty expression (Go writes one for results in optimized code) says
  // nothing about where the value is: such ranges are left out.
  if (std::vector<DwarfOp> ops; expression(&a, ops)) {
    if (!ops.empty()) out.push_back(LocationRange{0, UINT64_MAX, decodeLocation(ops, fbCfa)});
    return out;
  }
  Dwarf_Addr base = 0, start = 0, end = 0;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  for (ptrdiff_t off = 0; (off = dwarf_getlocations(&a, off, &base, &start, &end, &ops, &n)) > 0;) {
    if (n == 0) continue;
    std::vector<DwarfOp> plain(n);
    for (size_t i = 0; i < n; i++) plain[i] = {ops[i].atom, ops[i].number, ops[i].number2};
    out.push_back(LocationRange{start, end, decodeLocation(plain, fbCfa)});
  }
  return out;
}

void DwarfReader::readSubprogram(Dwarf_Die* cu, Dwarf_Die* die) {
  Dwarf_Die origin;
  bool hasOrigin = refAttr(die, DW_AT_abstract_origin, &origin);
  const char* name = dieName(hasOrigin ? &origin : die);
  if (!name) return;

  DwarfFunction fn;
  fn.name = name;
  Dwarf_Off originOff = 0;

  if (dwarf_hasattr(die, DW_AT_inline)) {
    // Abstract: the function exists only as inlined bodies unless an
    // out-of-line copy refers to this DIE (resolved in finishFunctions).
    fn.inlinedOnly = true;
    readParams(die, fn.params, nullptr);
    originOff = dwarf_dieoffset(die);
    abstractFn_[originOff] = out_.functions_.size();
  } else {
    Dwarf_Addr lo = 0, hi = 0;
    if (dwarf_lowpc(die, &lo) != 0 || dwarf_highpc(die, &hi) != 0) return;  // a declaration
    fn.lowPc = lo;
    fn.highPc = hi;
    bool fbCfa = frameBaseIsCfa(die);
    if (hasOrigin) {
      // Out-of-line copy of an inlined function: names and types live on the
      // abstract parameters, locations on ours; parameters the abstract DIE
      // leaves out (unnamed results) are declared here in full.
      originOff = dwarf_dieoffset(&origin);
      hasConcrete_[originOff] = true;
      std::vector<Dwarf_Off> offsets;
      readParams(&origin, fn.params, &offsets);
      Dwarf_Die child;
      if (dwarf_child(die, &child) == 0) {
        do {
          if (dwarf_tag(&child) != DW_TAG_formal_parameter) continue;
          Dwarf_Die ao;
          if (refAttr(&child, DW_AT_abstract_origin, &ao)) {
            auto it = std::find(offsets.begin(), offsets.end(), dwarf_dieoffset(&ao));
            if (it != offsets.end()) fn.params[it - offsets.begin()].locations = readLocations(&child, fbCfa);
            continue;
          }
          fn.params.push_back(readParam(&child));
          fn.params.back().locations = readLocations(&child, fbCfa);
        } while (dwarf_siblingof(&child, &child) == 0);
      }
    } else {
      Dwarf_Die child;
      if (dwarf_child(die, &child) == 0) {
        do {
          if (dwarf_tag(&child) != DW_TAG_formal_parameter) continue;
          fn.params.push_back(readParam(&child));
          fn.params.back().locations = readLocations(&child, fbCfa);
        } while (dwarf_siblingof(&child, &child) == 0);
      }
    }
    // Go gives subprograms a decl_file but no decl_line (an out-of-line copy
    // of an inlined function has neither); the line table has the file.
    if (Dwarf_Line* line = dwarf_getsrc_die(cu, lo)) {
      dwarf_lineno(line, &fn.declLine);
      if (const char* f = dwarf_linesrc(line, nullptr, nullptr)) fn.declFile = f;
    }
    collectInlined(cu, die, fn.name);
  }
  if (fn.declFile.empty())
    if (const char* f = dwarf_decl_file(die)) fn.declFile = f;
  // The `func` line: parameters carry it as their decl_line (abstract
  // parameters do not). The entry's line is only a fallback: a frameless
  // leaf function starts with its body.
  if (int line = firstParamLine(die); line > 0) fn.declLine = line;
  originOf_.push_back(originOff);
  out_.functions_.push_back(std::move(fn));
}

// Records every DW_TAG_inlined_subroutine under `parent` (lexical blocks and
// inlined bodies nest) against its abstract origin. Nesting deeper than
// kMaxNesting is ignored: Go's never comes near it, and malformed DWARF
// nesting 10000 blocks overflowed the stack (tests/fuzz/dwarf_types/regressions/).
void DwarfReader::collectInlined(Dwarf_Die* cu, Dwarf_Die* parent, const std::string& caller, int depth) {
  constexpr int kMaxNesting = 256;
  if (depth > kMaxNesting) return;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_inlined_subroutine) {
      Dwarf_Die origin;
      if (refAttr(&child, DW_AT_abstract_origin, &origin)) {
        DwarfInlinedCall call;
        call.caller = caller;
        Dwarf_Addr base = 0, start = 0, end = 0;
        if (dwarf_ranges(&child, 0, &base, &start, &end) > 0) {
          call.lowPc = start;
          call.highPc = end;
        }
        if (auto f = udataAttr(&child, DW_AT_call_file)) call.callFile = fileName(cu, *f);
        if (auto l = udataAttr(&child, DW_AT_call_line)) call.callLine = static_cast<int>(*l);
        Dwarf_Off o = dwarf_dieoffset(&origin);
        if (call.lowPc && !inlinedSample_.count(o)) inlinedSample_[o] = {dwarf_dieoffset(cu), call.lowPc};
        inlined_[o].push_back(std::move(call));
      }
    }
    if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) && dwarf_haschildren(&child))
      collectInlined(cu, &child, caller, depth + 1);
  } while (dwarf_siblingof(&child, &child) == 0);
}

std::string DwarfReader::fileName(Dwarf_Die* cu, uint64_t index) {
  Dwarf_Files* files = nullptr;
  size_t n = 0;
  if (dwarf_getsrcfiles(cu, &files, &n) != 0 || index >= n) return {};
  const char* f = dwarf_filesrc(files, index, nullptr, nullptr);
  return f ? f : "";
}

void DwarfReader::readVariable(Dwarf_Die* die) {
  const char* name = dieName(die);
  Dwarf_Attribute a;
  std::vector<DwarfOp> ops;
  if (!name || !dwarf_attr(die, DW_AT_location, &a) || !expression(&a, ops)) return;
  if (ops.size() != 1 || ops[0].atom != DW_OP_addr) return;  // package variables live at a static address
  GoVariable v;
  v.name = name;
  v.address = ops[0].number;
  v.type = typeNameOf(die);
  v.size = typeSizeOf(die);
  out_.variableByName_.emplace(v.name, out_.variables_.size());
  out_.variables_.push_back(std::move(v));
}

void DwarfReader::finishFunctions() {
  auto& fns = out_.functions_;
  // Inlined-only functions: no decl_file, no decl_line in the abstract DIE;
  // the line table at one inlined body gives the file (and a body line).
  for (auto& [off, idx] : abstractFn_) {
    auto s = inlinedSample_.find(off);
    if (s == inlinedSample_.end()) continue;
    Dwarf_Die cu;
    if (!dwarf_offdie(dbg_, s->second.first, &cu)) continue;
    Dwarf_Line* line = dwarf_getsrc_die(&cu, s->second.second);
    if (!line) continue;
    if (fns[idx].declFile.empty())
      if (const char* f = dwarf_linesrc(line, nullptr, nullptr)) fns[idx].declFile = f;
    if (fns[idx].declLine == 0) dwarf_lineno(line, &fns[idx].declLine);
  }

  // Names that have an out-of-line copy. An abstract DIE is dropped when a
  // copy refers to it (the usual case) or merely has its name; either way its
  // inlined call sites move to the copy.
  std::unordered_map<std::string, size_t> concrete;
  for (size_t i = 0; i < fns.size(); i++)
    if (!fns[i].inlinedOnly) concrete.emplace(fns[i].name, i);
  for (size_t i = 0; i < fns.size(); i++) {
    auto it = inlined_.find(originOf_[i]);
    if (!originOf_[i] || it == inlined_.end()) continue;
    size_t to = i;
    if (fns[i].inlinedOnly)
      if (auto c = concrete.find(fns[i].name); c != concrete.end()) to = c->second;
    auto& sites = fns[to].inlinedAt;
    sites.insert(sites.end(), std::make_move_iterator(it->second.begin()), std::make_move_iterator(it->second.end()));
    inlined_.erase(it);
  }

  std::vector<DwarfFunction> kept;
  kept.reserve(fns.size());
  for (size_t i = 0; i < fns.size(); i++) {
    if (fns[i].inlinedOnly && (hasConcrete_.count(originOf_[i]) || concrete.count(fns[i].name))) continue;
    kept.push_back(std::move(fns[i]));
  }
  fns = std::move(kept);

  for (size_t i = 0; i < fns.size(); i++) {
    const auto& f = fns[i];
    out_.functionByName_.emplace(f.name, i);  // first wins: names are unique but for malformed input
    if (!f.inlinedOnly) {
      out_.functionByEntry_.emplace(f.lowPc, i);
      out_.functionByPc_.emplace(f.lowPc, i);
    }
  }
}

}  // namespace goscope
