#include "backend/bpf/capture_plan.hpp"

#include <algorithm>
#include <functional>
#include <optional>

namespace goscope {
namespace {

using K = GoType::Kind;
using bpf::MemRead;
using bpf::Reg;
using What = BlockUse::What;

// Where one word of a value is at the site: a register, or RSP+offset.
struct WordLoc {
  bool inReg = false;
  Reg reg = Reg::RAX;
  int64_t rspOffset = 0;
};

std::optional<WordLoc> wordAt(const ValueLayout& v, uint64_t memOffset) {
  if (v.onStack) {
    if (v.parts.empty()) return std::nullopt;
    return WordLoc{false, Reg::RSP, v.parts[0].stackOffset + static_cast<int64_t>(memOffset)};
  }
  for (const auto& p : v.parts)
    if (p.kind == ValuePart::IntReg && p.memOffset == memOffset)
      if (auto r = bpf::goAbiIntReg(p.reg)) return WordLoc{true, *r, 0};
  return std::nullopt;
}

// Bytes at a word's address (a register holding a pointer, or a stack slot
// holding one: dereferenced first), then `deref` more bytes in.
MemRead readThrough(const WordLoc& w, int32_t offset, uint16_t len) {
  MemRead r;
  if (w.inReg) {
    r = MemRead::at(w.reg, offset, len);
  } else {
    r.base = Reg::RSP;
    r.offset = w.rspOffset;
    r.deref = true;
    r.derefOffset = offset;
    r.len = len;
    r.maxLen = len;
  }
  return r;
}

// Visits the strings, slices, interfaces and pointers inside a shape, in
// memory order; arrays up to `maxElems` elements.
void walk(const TypeShape& t, uint64_t mem, unsigned maxElems,
          const std::function<void(const TypeShape&, uint64_t)>& f) {
  switch (t.kind) {
    case K::String: case K::Slice: case K::Interface: case K::Pointer: f(t, mem); break;
    case K::Struct:
      for (const auto& fld : t.fields) walk(*fld.type, mem + fld.offset, maxElems, f);
      break;
    case K::Array:
      if (t.elem)
        for (uint64_t i = 0; i < t.count && i < maxElems; i++) walk(*t.elem, mem + i * t.elem->size, maxElems, f);
      break;
    default: break;
  }
}

bool pointeeWorthReading(const TypeShape& t) {
  if (!t.elem || t.elem->size == 0 || t.elem->size > GS_MAX_READ) return false;
  switch (t.elem->kind) {
    case K::Struct: case K::Array: case K::Bool: case K::Int: case K::Int8: case K::Int16: case K::Int32:
    case K::Int64: case K::Uint: case K::Uint8: case K::Uint16: case K::Uint32: case K::Uint64: case K::Uintptr:
    case K::Float32: case K::Float64: case K::String:
      return true;
    default: return false;
  }
}

class Planner {
 public:
  Planner(const CaptureOptions& o, CapturePlan& plan) : o_(o), plan_(plan) {}

  // The reads a value cannot be shown without.
  void needed(size_t vi, const ValueLayout& v, std::vector<MemRead>& reads) {
    if (!v.shape || !v.problem.empty()) return;
    if (v.onStack && !v.parts.empty()) {
      auto size = static_cast<uint16_t>(std::min<uint64_t>(v.parts[0].size, GS_MAX_READ));
      stackBytes(vi, reads, v.parts[0].stackOffset, size);
    }
    walk(*v.shape, 0, o_.maxElems, [&](const TypeShape& t, uint64_t mem) {
      auto w = wordAt(v, mem);
      if (!w) return;
      switch (t.kind) {
        case K::String:
          if (w->inReg) {
            auto len = wordAt(v, mem + 8);
            if (len) add(vi, reads, {What::StringBytes, mem}, MemRead::stringInRegs(w->reg, len->reg, o_.maxString));
          } else {
            add(vi, reads, {What::StringBytes, mem}, MemRead::stringAt(Reg::RSP, w->rspOffset, o_.maxString));
          }
          break;
        case K::Slice: {
          if (!t.elem || t.elem->size == 0 || t.elem->size > GS_MAX_READ || o_.maxElems == 0) break;
          auto es = static_cast<uint16_t>(t.elem->size);
          // maxElems elements, as many whole ones as 256 bytes hold, at least one.
          uint64_t bytes = std::min<uint64_t>(uint64_t{o_.maxElems} * es, GS_MAX_READ) / es * es;
          auto cap = static_cast<uint16_t>(std::max<uint64_t>(es, bytes));
          if (w->inReg) {
            auto len = wordAt(v, mem + 8);
            if (len) add(vi, reads, {What::SliceElems, mem}, MemRead::sliceInRegs(w->reg, len->reg, es, cap));
          } else {
            MemRead r = MemRead::stringAt(Reg::RSP, w->rspOffset, cap);
            r.len = es;
            add(vi, reads, {What::SliceElems, mem}, r);
          }
          break;
        }
        case K::Interface:
          // itab._type is the second word of the itab.
          if (!t.emptyInterface) add(vi, reads, {What::DynType, mem}, readThrough(*w, 8, 8));
          break;
        default: break;
      }
    });
  }

  // Reads that add detail when the budget allows.
  void extras(size_t vi, const ValueLayout& v, std::vector<MemRead>& reads) {
    if (!v.shape || !v.problem.empty()) return;
    walk(*v.shape, 0, o_.maxElems, [&](const TypeShape& t, uint64_t mem) {
      auto w = wordAt(v, mem);
      if (!w) return;
      if (t.kind == K::Pointer && o_.derefPointers && pointeeWorthReading(t)) {
        add(vi, reads, {What::Pointee, mem}, readThrough(*w, 0, static_cast<uint16_t>(t.elem->size)), false);
        // Its string fields, one dereference away only from a register.
        if (w->inReg)
          walk(*t.elem, 0, o_.maxElems, [&](const TypeShape& f, uint64_t fm) {
            if (f.kind == K::String)
              add(vi, reads, {What::PointeeString, mem, static_cast<uint32_t>(fm)},
                  MemRead::stringAt(w->reg, static_cast<int64_t>(fm), o_.maxString), false);
          });
      } else if (t.kind == K::Interface && o_.errorText && t.name == "error" && w->inReg) {
        if (auto data = wordAt(v, mem + 8))
          add(vi, reads, {What::ErrorText, mem}, MemRead::stringAt(data->reg, 0, o_.maxString), false);
      } else if (t.kind == K::Slice && t.elem && t.elem->kind == K::String && w->inReg) {
        for (unsigned i = 0; i < o_.maxElems; i++)
          add(vi, reads, {What::ElemString, mem, i}, MemRead::stringAt(w->reg, 16 * i, o_.maxString), false);
      }
    });
  }

 private:
  // A stack-passed value's bytes: in the last stack read of this site when
  // the union stays within one read (values come in increasing offsets),
  // else a read of its own.
  void stackBytes(size_t vi, std::vector<MemRead>& reads, int64_t offset, uint16_t size) {
    if (auto* s = lastSpan(reads); s && offset >= s->start && offset + size - s->start <= GS_MAX_READ) {
      s->end = std::max(s->end, offset + static_cast<int64_t>(size));
      MemRead& r = reads[s->index];
      r.len = r.maxLen = static_cast<uint16_t>(s->end - s->start);
      BlockUse use{What::ValueBytes, 0};
      use.block = static_cast<int>(s->index);
      use.blockOffset = static_cast<uint32_t>(offset - s->start);
      plan_.values[vi].uses.push_back(use);
      return;
    }
    const size_t before = reads.size();
    add(vi, reads, {What::ValueBytes, 0}, MemRead::at(Reg::RSP, offset, size));
    if (reads.size() > before) spans_.push_back({&reads, before, offset, offset + size});
  }

  struct StackSpan {
    const std::vector<MemRead>* reads;  // the site's reads (entry or return)
    size_t index;                       // the read
    int64_t start, end;                 // the RSP offsets it covers
  };
  StackSpan* lastSpan(const std::vector<MemRead>& reads) {
    for (auto it = spans_.rbegin(); it != spans_.rend(); ++it)
      if (it->reads == &reads) return &*it;
    return nullptr;
  }

  void add(size_t vi, std::vector<MemRead>& reads, BlockUse use, MemRead r, bool required = true) {
    if (reads.size() >= GS_MAX_STEPS) {
      if (required && plan_.values[vi].complete) {
        plan_.values[vi].complete = false;
        plan_.incomplete++;
      }
      return;
    }
    use.block = static_cast<int>(reads.size());
    reads.push_back(r);
    plan_.values[vi].uses.push_back(use);
  }

  const CaptureOptions& o_;
  CapturePlan& plan_;
  std::vector<StackSpan> spans_;
};

}  // namespace

const BlockUse* CapturePlan::find(size_t value, BlockUse::What what, uint64_t memOffset, uint32_t index) const {
  if (value >= values.size()) return nullptr;
  for (const auto& u : values[value].uses)
    if (u.what == what && u.memOffset == memOffset && u.index == index) return &u;
  return nullptr;
}

Result<CapturePlan> planCaptures(const std::vector<ValueLayout>& layout, const CaptureOptions& options) {
  if (options.maxString == 0 || options.maxString > GS_MAX_READ)
    return fail(ErrorKind::Usage, "string capture of " + std::to_string(options.maxString) +
                                      " bytes: the range is 1.." + std::to_string(GS_MAX_READ));
  CapturePlan plan;
  plan.values.resize(layout.size());
  Planner p(options, plan);
  for (bool results : {false, true}) {
    auto& reads = results ? plan.returnReads : plan.entryReads;
    for (size_t i = 0; i < layout.size(); i++)
      if (layout[i].isResult == results) p.needed(i, layout[i], reads);
    for (size_t i = 0; i < layout.size(); i++)
      if (layout[i].isResult == results) p.extras(i, layout[i], reads);
  }
  return plan;
}

}  // namespace goscope
