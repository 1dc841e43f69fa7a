#include "backend/bpf/value_decode.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include <boost/container/small_vector.hpp>

#include "backend/bpf/function_capture.hpp"
#include "util/hex.hpp"
#include "value/render.hpp"

namespace goscope {
namespace {

namespace json = boost::json;
using K = GoType::Kind;
using What = BlockUse::What;

constexpr unsigned kMaxArrayShown = 16;  // elements of an array printed
constexpr int kMaxDepth = 8;

// Dynamic types of `error` that keep the message as their first field, where
// the ErrorText read finds it.
constexpr std::string_view kMessageFirst[] = {"*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors"};

std::string errnoName(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "errno " + std::to_string(e);
}

Value missingValue(const std::string& why) { return Value::missing(why); }

// One contiguous memory image a value is decoded from: the value itself
// (registers put at their in-memory offsets, or its stack bytes), a pointee,
// or one slice element. `behind` says which captured block holds what the
// word at `off` points to.
struct Frame {
  // Most values are a few words: kept inline, not on the heap (a trace
  // decodes one per argument per call).
  boost::container::small_vector<uint8_t, 64> bytes;
  struct Gap {
    uint64_t off, size;
    std::string why;
  };
  boost::container::small_vector<Gap, 1> gaps;
  std::function<const bpf::CapturedBlock*(What, uint64_t off, uint32_t index)> behind;

  // Why [off, off+size) cannot be decoded, or nullptr.
  const std::string* gap(uint64_t off, uint64_t size) const {
    static const std::string outside = "not captured";
    for (const auto& g : gaps)
      if (off < g.off + g.size && g.off < off + size) return &g.why;
    if (off + size > bytes.size()) return &outside;
    return nullptr;
  }
  uint64_t word(uint64_t off, uint64_t size = 8) const {
    uint64_t v = 0;
    if (off + size <= bytes.size()) std::memcpy(&v, bytes.data() + off, size);
    return v;
  }
};

// A block that was read, or why not.
const bpf::CapturedBlock* usable(const bpf::CapturedBlock* b, std::string& why) {
  if (!b) {
    why = "not captured";
    return nullptr;
  }
  if (b->errnoValue) {
    why = "unreadable: " + errnoName(b->errnoValue);
    return nullptr;
  }
  return b;
}

class Formatter {
 public:
  Formatter(const bpf::Event& e, const TypeNamer& names) : e_(e), names_(names) {}

  Value value(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    Value v;
    if (depth > kMaxDepth) {
      v = Value::missing("");
      v.elided = true;
    } else {
      switch (t.kind) {
        case K::String: v = str(f, off); break;
        case K::Slice: v = slice(t, f, off, depth); break;
        case K::Interface: v = iface(t, f, off); break;
        case K::Struct: v = structure(t, f, off, depth); break;
        case K::Array: v = array(t, f, off, depth); break;
        case K::Pointer: v = pointer(t, f, off, depth); break;
        default: v = scalar(t, f, off); break;
      }
    }
    if (v.type.empty()) v.type = t.name;
    return v;
  }

 private:
  Value scalar(const TypeShape& t, const Frame& f, uint64_t off) {
    if (const std::string* why = f.gap(off, t.size)) return missingValue(*why);
    uint64_t raw = f.word(off, std::min<uint64_t>(t.size, 8));
    Value v;
    switch (t.kind) {
      case K::Bool:
        v.kind = Value::Kind::Bool;
        v.boolean = raw != 0;
        return v;
      case K::Int: case K::Int8: case K::Int16: case K::Int32: case K::Int64: {
        unsigned bits = 8 * static_cast<unsigned>(t.size);
        v.kind = Value::Kind::Int;
        v.i = bits >= 64 ? static_cast<int64_t>(raw) : static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);
        return v;
      }
      case K::Uint: case K::Uint8: case K::Uint16: case K::Uint32: case K::Uint64: case K::Uintptr:
        v.kind = Value::Kind::Uint;
        v.u = raw;
        return v;
      case K::Float32: {
        float x;
        std::memcpy(&x, &raw, 4);
        v.kind = Value::Kind::Float;
        v.f = x;
        return v;
      }
      case K::Float64:
        v.kind = Value::Kind::Float;
        std::memcpy(&v.f, &raw, 8);
        return v;
      case K::Complex64: case K::Complex128: {
        v.kind = Value::Kind::Complex;
        if (t.size / 2 == 4) {
          float a, b;
          std::memcpy(&a, f.bytes.data() + off, 4);
          std::memcpy(&b, f.bytes.data() + off + 4, 4);
          v.f = a, v.imag = b;
        } else {
          std::memcpy(&v.f, f.bytes.data() + off, 8);
          std::memcpy(&v.imag, f.bytes.data() + off + 8, 8);
        }
        return v;
      }
      case K::Map: v.kind = Value::Kind::Map; break;
      case K::Chan: v.kind = Value::Kind::Chan; break;
      case K::Func: v.kind = Value::Kind::Func; break;
      default: v.kind = Value::Kind::UnsafePointer; break;  // unsafe.Pointer: one address word
    }
    // map, chan, func: one address word; what it points to is not read.
    v.address = raw;
    v.nil = raw == 0;
    if (v.kind == Value::Kind::Map || v.kind == Value::Kind::Chan) {
      v.kind = Value::Kind::UnsafePointer;  // printed as the address: its length was not read
    }
    return v;
  }

  Value str(const Frame& f, uint64_t off) {
    if (const std::string* why = f.gap(off, 16)) return missingValue(*why);
    uint64_t len = f.word(off + 8);
    Value v;
    v.kind = Value::Kind::String;
    v.len = len;
    if (len == 0) return v;
    std::string why;
    const bpf::CapturedBlock* b = usable(f.behind ? f.behind(What::StringBytes, off, 0) : nullptr, why);
    if (!b) return missingValue(why == "not captured" ? "not captured: " + std::to_string(len) + " bytes" : why);
    v.text.assign(reinterpret_cast<const char*>(b->bytes.data()), std::min<uint64_t>(b->bytes.size(), len));
    return v;
  }

  Value slice(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    if (const std::string* why = f.gap(off, 24)) return missingValue(*why);
    Value v;
    v.kind = Value::Kind::Slice;
    v.address = f.word(off);
    v.len = f.word(off + 8);
    v.cap = f.word(off + 16);
    v.nil = v.address == 0 && v.len == 0 && v.cap == 0;
    if (v.nil || v.len == 0) return v;
    if (!t.elem || t.elem->size == 0) {
      v.elided = true;
      return v;
    }
    std::string why;
    const bpf::CapturedBlock* b = usable(f.behind ? f.behind(What::SliceElems, off, 0) : nullptr, why);
    if (!b) {
      v.elementsUnavailable = why;
      return v;
    }
    uint64_t es = t.elem->size;
    uint64_t shown = std::min<uint64_t>(v.len, b->bytes.size() / es);
    for (uint64_t i = 0; i < shown; i++) {
      Frame ef;
      ef.bytes.assign(b->bytes.begin() + i * es, b->bytes.begin() + (i + 1) * es);
      // A []string's element strings are read apart (ElemString), keyed by index.
      if (f.behind)
        ef.behind = [&f, off, i](What w, uint64_t o, uint32_t) -> const bpf::CapturedBlock* {
          return w == What::StringBytes && o == 0 ? f.behind(What::ElemString, off, static_cast<uint32_t>(i)) : nullptr;
        };
      v.children.push_back(value(*t.elem, ef, 0, depth + 1));
    }
    return v;
  }

  Value iface(const TypeShape& t, const Frame& f, uint64_t off) {
    if (const std::string* why = f.gap(off, 16)) return missingValue(*why);
    uint64_t tw = f.word(off), data = f.word(off + 8);
    Value v;
    v.kind = Value::Kind::Interface;
    v.nil = tw == 0;
    v.address = data;
    if (v.nil) return v;
    // The dynamic type: the type word itself (interface {}), or itab._type.
    std::optional<uint64_t> typeAddr;
    std::string why;
    if (t.emptyInterface) {
      typeAddr = tw;
    } else if (const bpf::CapturedBlock* b = usable(f.behind ? f.behind(What::DynType, off, 0) : nullptr, why);
               b && b->bytes.size() >= 8) {
      uint64_t a;
      std::memcpy(&a, b->bytes.data(), 8);
      typeAddr = a;
    }
    std::optional<std::string> dyn;
    if (typeAddr) dyn = names_.nameOf(*typeAddr, e_.pid);
    if (dyn) v.dynamicType = *dyn;
    else v.text = typeAddr ? "type@" + hex(*typeAddr) : "<" + why + ">";  // shown in place of the type
    bool messageFirst =
        dyn && std::find(std::begin(kMessageFirst), std::end(kMessageFirst), *dyn) != std::end(kMessageFirst);
    std::string ignored;
    const bpf::CapturedBlock* b = messageFirst && f.behind ? usable(f.behind(What::ErrorText, off, 0), ignored) : nullptr;
    if (b) {
      v.errorText = std::string(reinterpret_cast<const char*>(b->bytes.data()), b->bytes.size());
      if (b->truncated()) v.errorTextMissing = b->fullLen - b->bytes.size();
    }
    return v;
  }

  Value structure(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    Value v;
    v.kind = Value::Kind::Struct;
    for (const auto& fld : t.fields) {
      Value c = value(*fld.type, f, off + fld.offset, depth + 1);
      c.name = fld.name;
      v.children.push_back(std::move(c));
    }
    return v;
  }

  Value array(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    Value v;
    v.kind = Value::Kind::Array;
    v.len = t.count;
    uint64_t shown = std::min<uint64_t>(t.count, kMaxArrayShown);
    for (uint64_t i = 0; t.elem && i < shown; i++) v.children.push_back(value(*t.elem, f, off + i * t.elem->size, depth + 1));
    return v;
  }

  Value pointer(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    if (const std::string* why = f.gap(off, 8)) return missingValue(*why);
    Value v;
    v.kind = Value::Kind::Pointer;
    v.address = f.word(off);
    v.nil = v.address == 0;
    if (v.nil) return v;
    std::string ignored;
    const bpf::CapturedBlock* b =
        t.elem && f.behind ? usable(f.behind(What::Pointee, off, 0), ignored) : nullptr;
    if (!b) return v;
    Frame pf;
    pf.bytes.assign(b->bytes.begin(), b->bytes.end());
    pf.behind = [&f, off](What w, uint64_t o, uint32_t) -> const bpf::CapturedBlock* {
      return w == What::StringBytes ? f.behind(What::PointeeString, off, static_cast<uint32_t>(o)) : nullptr;
    };
    v.children.push_back(value(*t.elem, pf, 0, depth + 1));
    return v;
  }

  const bpf::Event& e_;
  const TypeNamer& names_;
};

// The value's own memory image: registers at their in-memory offsets (float
// registers, which BPF cannot read, leave gaps), or its stack bytes.
// Which value of which event a frame's blocks are looked up for; it outlives
// the frame (decode()'s loop), so the lookup captures one pointer and fits
// std::function's inline storage.
struct BlockSource {
  const bpf::Event& e;
  const CapturePlan& plan;
  size_t vi;
};

Frame valueFrame(const bpf::Event& e, const ValueLayout& v, const BlockSource* src) {
  Frame f;
  f.bytes.assign(v.shape->size, 0);
  f.behind = [src](What w, uint64_t off, uint32_t index) -> const bpf::CapturedBlock* {
    const BlockUse* u = src->plan.find(src->vi, w, off, index);
    if (!u || u->block < 0 || static_cast<size_t>(u->block) >= src->e.blocks.size()) return nullptr;
    return &src->e.blocks[u->block];
  };
  if (v.onStack) {
    std::string why;
    const bpf::CapturedBlock* b = usable(f.behind(What::ValueBytes, 0, 0), why);
    if (!b) {
      f.gaps.push_back({0, v.shape->size, why});
      return f;
    }
    // Values next to each other on the stack share a read: this one's bytes
    // start `blockOffset` into it.
    const BlockUse* u = src->plan.find(src->vi, What::ValueBytes, 0);
    const size_t at = u ? u->blockOffset : 0;
    size_t n = b->bytes.size() > at ? std::min<size_t>(b->bytes.size() - at, f.bytes.size()) : 0;
    std::memcpy(f.bytes.data(), b->bytes.data() + at, n);
    if (n < f.bytes.size()) f.gaps.push_back({n, f.bytes.size() - n, "not captured"});
    return f;
  }
  for (const auto& p : v.parts) {
    if (p.memOffset + p.size > f.bytes.size()) continue;
    if (p.kind == ValuePart::IntReg && p.reg < e.regs.size()) {
      uint64_t r = e.regs[p.reg];
      std::memcpy(f.bytes.data() + p.memOffset, &r, std::min<uint32_t>(p.size, 8));
    } else if (p.kind == ValuePart::FloatReg) {
      f.gaps.push_back({p.memOffset, p.size, "unavailable: float in X" + std::to_string(p.reg)});
    }
  }
  return f;
}

// The values of one side of a call, appended to `out` (Values only: text
// and JSON are the output's business).
void decodeInto(const bpf::Event& e, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                const TypeNamer& types, bool results, const std::function<bool(const std::string&)>& skip,
                std::vector<Value>& out) {
  Formatter fmt(e, types);
  for (size_t i = 0; i < layout.size(); i++) {
    const ValueLayout& v = layout[i];
    if (v.isResult != results) continue;
    if (skip && skip(v.name)) continue;
    if (!v.problem.empty() || !v.shape) {
      out.push_back(Value::missing("unknown: " + (v.problem.empty() ? std::string("no type") : v.problem)));
    } else {
      const BlockSource src{e, plan, i};
      Frame f = valueFrame(e, v, &src);
      out.push_back(fmt.value(*v.shape, f, 0, 0));
    }
    out.back().name = v.name;
  }
}

std::vector<DecodedValue> decode(const bpf::Event& e, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                                 const TypeNamer& types, bool results) {
  std::vector<Value> values;
  decodeInto(e, layout, plan, types, results, {}, values);
  std::vector<DecodedValue> out;
  for (auto& v : values) {
    DecodedValue d;
    d.name = v.name;
    d.text = renderText(v);
    d.json = renderJson(v);
    d.value = std::move(v);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace


std::vector<DecodedValue> decodeArgs(const bpf::Event& event, const std::vector<ValueLayout>& layout,
                                     const CapturePlan& plan, const TypeNamer& types) {
  return decode(event, layout, plan, types, false);
}

std::vector<DecodedValue> decodeResults(const bpf::Event& event, const std::vector<ValueLayout>& layout,
                                        const CapturePlan& plan, const TypeNamer& types) {
  return decode(event, layout, plan, types, true);
}

void decodeArgValues(const bpf::Event& event, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                     const TypeNamer& types, std::vector<Value>& out, bool dropHidden) {
  out.clear();
  static const std::function<bool(const std::string&)> hidden = [](const std::string& n) { return hiddenParameter(n); };
  decodeInto(event, layout, plan, types, false, dropHidden ? hidden : std::function<bool(const std::string&)>{}, out);
}

void decodeResultValues(const bpf::Event& event, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                        const TypeNamer& types, std::vector<Value>& out) {
  out.clear();
  decodeInto(event, layout, plan, types, true, {}, out);
}

}  // namespace goscope
