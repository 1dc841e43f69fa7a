#include "output/value_format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "output/hex.hpp"

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

struct Out {
  std::string text;
  json::value json;
};

Out missingOut(const std::string& why) { return {"<" + why + ">", nullptr}; }

// One contiguous memory image a value is decoded from: the value itself
// (registers put at their in-memory offsets, or its stack bytes), a pointee,
// or one slice element. `behind` says which captured block holds what the
// word at `off` points to.
struct Frame {
  std::vector<uint8_t> bytes;
  struct Gap {
    uint64_t off, size;
    std::string why;
  };
  std::vector<Gap> gaps;
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

// Valid UTF-8 for JSON: invalid bytes become U+FFFD.
std::string utf8Sanitized(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; k++) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i++;
    }
  }
  return out;
}

template <class F>
std::string floatText(F v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

json::value floatJson(double v) {
  if (std::isfinite(v)) return v;
  return json::string(floatText(v));  // JSON has no NaN or infinities
}

class Formatter {
 public:
  Formatter(const bpf::Event& e, const TypeNamer& names) : e_(e), names_(names) {}

  Out value(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    if (depth > kMaxDepth) return {"…", nullptr};
    switch (t.kind) {
      case K::String: return str(f, off);
      case K::Slice: return slice(t, f, off, depth);
      case K::Interface: return iface(t, f, off);
      case K::Struct: return structure(t, f, off, depth);
      case K::Array: return array(t, f, off, depth);
      case K::Pointer: return pointer(t, f, off, depth);
      default: return scalar(t, f, off);
    }
  }

 private:
  Out scalar(const TypeShape& t, const Frame& f, uint64_t off) {
    if (const std::string* why = f.gap(off, t.size)) return missingOut(*why);
    uint64_t raw = f.word(off, std::min<uint64_t>(t.size, 8));
    switch (t.kind) {
      case K::Bool: return {raw ? "true" : "false", raw != 0};
      case K::Int: case K::Int8: case K::Int16: case K::Int32: case K::Int64: {
        unsigned bits = 8 * static_cast<unsigned>(t.size);
        int64_t v = bits >= 64 ? static_cast<int64_t>(raw) : static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);
        return {std::to_string(v), v};
      }
      case K::Uint: case K::Uint8: case K::Uint16: case K::Uint32: case K::Uint64: case K::Uintptr:
        return {std::to_string(raw), raw};
      case K::Float32: {
        float v;
        std::memcpy(&v, &raw, 4);
        return {floatText(v), floatJson(v)};
      }
      case K::Float64: {
        double v;
        std::memcpy(&v, &raw, 8);
        return {floatText(v), floatJson(v)};
      }
      case K::Complex64: case K::Complex128: {
        uint64_t half = t.size / 2;
        double re, im;
        if (half == 4) {
          float a, b;
          std::memcpy(&a, f.bytes.data() + off, 4);
          std::memcpy(&b, f.bytes.data() + off + 4, 4);
          re = a, im = b;
        } else {
          std::memcpy(&re, f.bytes.data() + off, 8);
          std::memcpy(&im, f.bytes.data() + off + 8, 8);
        }
        std::string imText = floatText(im);
        if (imText[0] != '-' && imText[0] != '+') imText = "+" + imText;
        return {"(" + floatText(re) + imText + "i)", json::object{{"real", floatJson(re)}, {"imag", floatJson(im)}}};
      }
      default:  // unsafe.Pointer, map, chan, func: one address word
        if (raw == 0) return {"nil", nullptr};
        return {hex(raw), json::string(hex(raw))};
    }
  }

  Out str(const Frame& f, uint64_t off) {
    if (const std::string* why = f.gap(off, 16)) return missingOut(*why);
    uint64_t len = f.word(off + 8);
    if (len == 0) return {"\"\"", json::string()};
    std::string why;
    const bpf::CapturedBlock* b = usable(f.behind ? f.behind(What::StringBytes, off, 0) : nullptr, why);
    if (!b) return missingOut(why == "not captured" ? "not captured: " + std::to_string(len) + " bytes" : why);
    std::string_view got(reinterpret_cast<const char*>(b->bytes.data()), std::min<uint64_t>(b->bytes.size(), len));
    std::string text = quoteGo(got);
    if (got.size() < len) {
      text.insert(text.size() - 1, "…");
      text += "(+" + std::to_string(len - got.size()) + " bytes)";
    }
    return {text, json::string(utf8Sanitized(got))};
  }

  Out slice(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    if (const std::string* why = f.gap(off, 24)) return missingOut(*why);
    uint64_t ptr = f.word(off), len = f.word(off + 8), cap = f.word(off + 16);
    if (ptr == 0 && len == 0 && cap == 0) return {t.name + "(nil)", nullptr};
    std::string head = t.name + "{len=" + std::to_string(len) + " cap=" + std::to_string(cap);
    json::object j{{"len", len}, {"cap", cap}};
    if (len == 0) {
      j["elems"] = json::array();
      return {head + "}", std::move(j)};
    }
    if (!t.elem || t.elem->size == 0) return {head + "}", std::move(j)};
    std::string why;
    const bpf::CapturedBlock* b = usable(f.behind ? f.behind(What::SliceElems, off, 0) : nullptr, why);
    if (!b) return {head + ": <" + why + ">}", std::move(j)};
    uint64_t es = t.elem->size;
    uint64_t shown = std::min<uint64_t>(len, b->bytes.size() / es);
    std::string text = head + ":";
    json::array elems;
    for (uint64_t i = 0; i < shown; i++) {
      Frame ef;
      ef.bytes.assign(b->bytes.begin() + i * es, b->bytes.begin() + (i + 1) * es);
      // A []string's element strings are read apart (ElemString), keyed by index.
      if (f.behind)
        ef.behind = [&f, off, i](What w, uint64_t o, uint32_t) -> const bpf::CapturedBlock* {
          return w == What::StringBytes && o == 0 ? f.behind(What::ElemString, off, static_cast<uint32_t>(i)) : nullptr;
        };
      Out o = value(*t.elem, ef, 0, depth + 1);
      text += (i ? ", " : " ") + o.text;
      elems.push_back(std::move(o.json));
    }
    if (shown < len) text += shown ? ", …" : " …";
    j["elems"] = std::move(elems);
    return {text + "}", std::move(j)};
  }

  Out iface(const TypeShape& t, const Frame& f, uint64_t off) {
    if (const std::string* why = f.gap(off, 16)) return missingOut(*why);
    uint64_t tw = f.word(off), data = f.word(off + 8);
    if (tw == 0) return {"nil", nullptr};
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
    std::string dynText = dyn ? *dyn : typeAddr ? "type@" + hex(*typeAddr) : "<" + why + ">";
    std::string text = t.name + "(" + dynText + ")" + hex(data);
    json::object j{{"type", dyn ? json::value(json::string(*dyn)) : json::value(nullptr)}, {"value", hex(data)}};
    bool messageFirst =
        dyn && std::find(std::begin(kMessageFirst), std::end(kMessageFirst), *dyn) != std::end(kMessageFirst);
    std::string ignored;
    const bpf::CapturedBlock* b = messageFirst && f.behind ? usable(f.behind(What::ErrorText, off, 0), ignored) : nullptr;
    if (b) {
      std::string_view msg(reinterpret_cast<const char*>(b->bytes.data()), b->bytes.size());
      text += " " + quoteGo(msg);
      if (b->truncated()) text += "(+" + std::to_string(b->fullLen - b->bytes.size()) + " bytes)";
      j["error"] = utf8Sanitized(msg);
    }
    return {text, std::move(j)};
  }

  Out structure(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    std::string text = (t.name.empty() || t.name.starts_with("struct {") ? std::string("struct") : t.name) + "{";
    json::object j;
    bool first = true;
    for (const auto& fld : t.fields) {
      Out o = value(*fld.type, f, off + fld.offset, depth + 1);
      text += (first ? "" : ", ") + fld.name + ": " + o.text;
      first = false;
      j[fld.name] = std::move(o.json);
    }
    return {text + "}", std::move(j)};
  }

  Out array(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    std::string text = t.name + "{";
    json::array j;
    uint64_t shown = std::min<uint64_t>(t.count, kMaxArrayShown);
    for (uint64_t i = 0; t.elem && i < shown; i++) {
      Out o = value(*t.elem, f, off + i * t.elem->size, depth + 1);
      text += (i ? ", " : "") + o.text;
      j.push_back(std::move(o.json));
    }
    if (shown < t.count) text += ", …";
    return {text + "}", std::move(j)};
  }

  Out pointer(const TypeShape& t, const Frame& f, uint64_t off, int depth) {
    if (const std::string* why = f.gap(off, 8)) return missingOut(*why);
    uint64_t p = f.word(off);
    if (p == 0) return {"nil", nullptr};
    std::string ignored;
    const bpf::CapturedBlock* b =
        t.elem && f.behind ? usable(f.behind(What::Pointee, off, 0), ignored) : nullptr;
    if (!b) return {hex(p), json::string(hex(p))};
    Frame pf;
    pf.bytes.assign(b->bytes.begin(), b->bytes.end());
    pf.behind = [&f, off](What w, uint64_t o, uint32_t) -> const bpf::CapturedBlock* {
      return w == What::StringBytes ? f.behind(What::PointeeString, off, static_cast<uint32_t>(o)) : nullptr;
    };
    Out o = value(*t.elem, pf, 0, depth + 1);
    return {"&" + o.text, json::object{{"addr", hex(p)}, {"value", std::move(o.json)}}};
  }

  const bpf::Event& e_;
  const TypeNamer& names_;
};

// The value's own memory image: registers at their in-memory offsets (float
// registers, which BPF cannot read, leave gaps), or its stack bytes.
Frame valueFrame(const bpf::Event& e, const ValueLayout& v, size_t vi, const CapturePlan& plan) {
  Frame f;
  f.bytes.assign(v.shape->size, 0);
  f.behind = [&e, &plan, vi](What w, uint64_t off, uint32_t index) -> const bpf::CapturedBlock* {
    const BlockUse* u = plan.find(vi, w, off, index);
    if (!u || u->block < 0 || static_cast<size_t>(u->block) >= e.blocks.size()) return nullptr;
    return &e.blocks[u->block];
  };
  if (v.onStack) {
    std::string why;
    const bpf::CapturedBlock* b = usable(f.behind(What::ValueBytes, 0, 0), why);
    if (!b) {
      f.gaps.push_back({0, v.shape->size, why});
      return f;
    }
    size_t n = std::min<size_t>(b->bytes.size(), f.bytes.size());
    std::memcpy(f.bytes.data(), b->bytes.data(), n);
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

std::vector<DecodedValue> decode(const bpf::Event& e, const std::vector<ValueLayout>& layout, const CapturePlan& plan,
                                 const TypeNamer& types, bool results) {
  std::vector<DecodedValue> out;
  Formatter fmt(e, types);
  for (size_t i = 0; i < layout.size(); i++) {
    const ValueLayout& v = layout[i];
    if (v.isResult != results) continue;
    DecodedValue d;
    d.name = v.name;
    if (!v.problem.empty() || !v.shape) {
      d.text = "<unknown: " + (v.problem.empty() ? std::string("no type") : v.problem) + ">";
      d.json = nullptr;
    } else {
      Frame f = valueFrame(e, v, i, plan);
      Out o = fmt.value(*v.shape, f, 0, 0);
      d.text = std::move(o.text);
      d.json = std::move(o.json);
    }
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

}  // namespace goscope
