#include "backend/memory/direct_read.hpp"

#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "backend/memory/read_selector.hpp"
#include "binary/go_runtime_facts.hpp"

namespace goscope {

namespace {

using Kind = GoType::Kind;

bool isInteger(Kind k) { return k >= Kind::Int && k <= Kind::Uintptr; }
bool isSignedKind(Kind k) { return k >= Kind::Int && k <= Kind::Int64; }

const GoType::Field* fieldNamed(const GoType* t, std::string_view name) {
  if (!t) return nullptr;
  for (const auto& f : t->fields)
    if (f.name == name) return &f;
  return nullptr;
}

// The type a pointer type points to.
const GoType* pointee(const DwarfInfo& d, const std::string& ptrName) {
  const GoType* p = d.type(ptrName);
  return p && p->kind == Kind::Pointer ? d.type(p->elem) : nullptr;
}

// A map's runtime layout, from the linker's synthesized DWARF structs
// (docs/go-runtime.md "Maps"): bucket maps (hash<K,V>, bucket<K,V>) up to
// Go 1.23, Swiss tables (map<K,V>, table<K,V>, groupReference<K,V>, group)
// from 1.24. Only field names are assumed, as Delve assumes them.
struct MapLayout {
  bool swiss = false;
  const GoType* header = nullptr;
  // Bucket maps.
  const GoType::Field *count = nullptr, *b = nullptr, *buckets = nullptr, *oldbuckets = nullptr;
  const GoType* bucket = nullptr;
  const GoType::Field *tophash = nullptr, *keys = nullptr, *values = nullptr, *overflow = nullptr;
  // Swiss tables.
  const GoType::Field *used = nullptr, *dirPtr = nullptr, *dirLen = nullptr;
  const GoType* table = nullptr;
  const GoType::Field *tableIndex = nullptr, *tableGroups = nullptr, *groupsData = nullptr, *lengthMask = nullptr;
  const GoType* group = nullptr;
  const GoType::Field *ctrl = nullptr, *slots = nullptr, *slotKey = nullptr, *slotElem = nullptr;
  const GoType::Field *groupKeys = nullptr, *groupElems = nullptr;  // split layout (KKKKVVVV)
  uint64_t slotSize = 0, keyStride = 0, elemStride = 0;
  std::string keyType, elemType;  // as stored in a slot: K, or *K when stored indirectly
};

// The layout, or why there is none.
std::string mapLayout(const DwarfInfo& d, const GoType& m, MapLayout& L) {
  L.header = pointee(d, m.impl);
  if (!L.header) return "its runtime header type (" + m.impl + ") is not in DWARF";
  const GoType* h = L.header;
  if ((L.count = fieldNamed(h, "count")) && (L.b = fieldNamed(h, "B")) && (L.buckets = fieldNamed(h, "buckets")) &&
      (L.oldbuckets = fieldNamed(h, "oldbuckets"))) {
    L.bucket = pointee(d, L.buckets->type);
    L.tophash = fieldNamed(L.bucket, "tophash");
    L.keys = fieldNamed(L.bucket, "keys");
    L.values = fieldNamed(L.bucket, "values");
    L.overflow = fieldNamed(L.bucket, "overflow");
    if (!L.tophash || !L.keys || !L.values || !L.overflow) return "its bucket type has no tophash, keys, values or overflow";
    const GoType* ka = d.type(L.keys->type);
    const GoType* va = d.type(L.values->type);
    if (!ka || !va || ka->kind != Kind::Array || va->kind != Kind::Array) return "its bucket's keys or values are not arrays";
    L.keyType = ka->elem;
    L.elemType = va->elem;
    const GoType* ke = d.type(ka->elem);
    const GoType* ve = d.type(va->elem);
    if (!ke || !ve) return "its bucket's key or value type is not in DWARF";
    L.keyStride = ke->size;
    L.elemStride = ve->size;
    return {};
  }
  if ((L.used = fieldNamed(h, "used")) && (L.dirPtr = fieldNamed(h, "dirPtr")) && (L.dirLen = fieldNamed(h, "dirLen"))) {
    L.swiss = true;
    const GoType* tp = pointee(d, L.dirPtr->type);  // **table: *table
    L.table = tp && tp->kind == Kind::Pointer ? d.type(tp->elem) : nullptr;
    L.tableIndex = fieldNamed(L.table, "index");
    L.tableGroups = fieldNamed(L.table, "groups");
    const GoType* gr = L.tableGroups ? d.type(L.tableGroups->type) : nullptr;
    L.groupsData = fieldNamed(gr, "data");
    L.lengthMask = fieldNamed(gr, "lengthMask");
    if (!L.tableIndex || !L.groupsData || !L.lengthMask) return "its Swiss table type has no index, groups.data or groups.lengthMask";
    L.group = pointee(d, L.groupsData->type);
    L.ctrl = fieldNamed(L.group, "ctrl");
    L.slots = fieldNamed(L.group, "slots");
    L.groupKeys = fieldNamed(L.group, "keys");
    L.groupElems = fieldNamed(L.group, "elems");
    if (!L.ctrl || (!L.slots && !(L.groupKeys && L.groupElems))) return "its group type has no ctrl and slots (or keys and elems)";
    if (L.slots) {
      const GoType* sa = d.type(L.slots->type);
      const GoType* slot = sa && sa->kind == Kind::Array ? d.type(sa->elem) : nullptr;
      L.slotKey = fieldNamed(slot, "key");
      L.slotElem = fieldNamed(slot, "elem");
      if (!L.slotKey || !L.slotElem) return "its slot type has no key and elem";
      L.slotSize = slot->size;
      L.keyType = L.slotKey->type;
      L.elemType = L.slotElem->type;
    } else {
      const GoType* ka = d.type(L.groupKeys->type);
      const GoType* va = d.type(L.groupElems->type);
      if (!ka || !va || ka->kind != Kind::Array || va->kind != Kind::Array) return "its group's keys or elems are not arrays";
      L.keyType = ka->elem;
      L.elemType = va->elem;
      const GoType* ke = d.type(ka->elem);
      const GoType* ve = d.type(va->elem);
      if (!ke || !ve) return "its group's key or value type is not in DWARF";
      L.keyStride = ke->size;
      L.elemStride = ve->size;
    }
    return {};
  }
  return "its runtime header (" + h->name + ") has neither count/B/buckets/oldbuckets nor used/dirPtr/dirLen: a map layout goscope does not know";
}

// A channel's len and cap: hchan<T>'s qcount and dataqsiz.
std::string chanLayout(const DwarfInfo& d, const GoType& c, const GoType::Field*& qcount, const GoType::Field*& dataqsiz) {
  const GoType* h = pointee(d, c.impl);
  if (!h) return "its runtime type (" + c.impl + ") is not in DWARF";
  qcount = fieldNamed(h, "qcount");
  dataqsiz = fieldNamed(h, "dataqsiz");
  if (!qcount || !dataqsiz) return "its runtime type " + h->name + " has no qcount and dataqsiz";
  return {};
}

// Where an interface's dynamic type word is: the eface's first word, or the
// `_type` (Go <= 1.21 runtime.itab) / `Type` (internal/abi.ITab) word of its
// itab.
struct IfaceLayout {
  bool viaItab = false;
  uint64_t typeInItab = 0;
};

std::string ifaceLayout(const DwarfInfo& d, const GoType& t, IfaceLayout& L) {
  if (t.fields.size() != 2 || t.size != 16) return "its runtime layout (" + t.name + ") is not two words in DWARF";
  if (t.fields[0].name == "_type") return {};
  if (t.fields[0].name != "tab") return "its first word is neither tab nor _type";
  const GoType* itab = pointee(d, t.fields[0].type);
  const GoType::Field* f = fieldNamed(itab, "_type");
  if (!f) f = fieldNamed(itab, "Type");
  if (!f) return "its itab type has no _type or Type field";
  L.viaItab = true;
  L.typeInItab = f->offset;
  return {};
}

// Whether Go stores a value of this type in an interface's data word itself
// rather than behind a pointer: pointer-shaped types (internal/abi
// TFlagDirectIface: size == ptrdata == one pointer).
bool directIface(const DwarfInfo& d, const GoType* t, int depth = 0) {
  if (!t || depth > 8) return false;
  switch (t->kind) {
    case Kind::Pointer:
    case Kind::Map:
    case Kind::Chan:
    case Kind::Func:
    case Kind::UnsafePointer: return true;
    case Kind::Struct: return t->fields.size() == 1 && directIface(d, d.type(t->fields[0].type), depth + 1);
    case Kind::Array: return t->count == 1 && directIface(d, d.type(t->elem), depth + 1);
    default: return false;
  }
}

// The reasons a type cannot be read directly, looked for in every type it
// reaches.
std::string refusal(const GoBinary& bin, const DwarfInfo& d, const std::string& typeName, std::set<std::string>& seen) {
  if (!seen.insert(typeName).second) return {};
  const GoType* t = d.type(typeName);
  if (!t) return "its type " + typeName + " is not in DWARF";
  switch (t->kind) {
    case Kind::Struct:
      for (const auto& f : t->fields)
        if (auto why = refusal(bin, d, f.type, seen); !why.empty()) return why;
      return {};
    case Kind::Array:
    case Kind::Slice:
    case Kind::Pointer: return refusal(bin, d, t->elem, seen);
    case Kind::Map: {
      MapLayout L;
      if (auto why = mapLayout(d, *t, L); !why.empty()) return "it holds a map (" + t->name + "): " + why;
      if (auto why = refusal(bin, d, t->key, seen); !why.empty()) return why;
      return refusal(bin, d, t->elem, seen);
    }
    case Kind::Chan: {
      const GoType::Field *q = nullptr, *c = nullptr;
      if (auto why = chanLayout(d, *t, q, c); !why.empty()) return "it holds a channel (" + t->name + "): " + why;
      return {};
    }
    case Kind::Interface: {
      IfaceLayout L;
      if (auto why = ifaceLayout(d, *t, L); !why.empty()) return "it holds an interface (" + t->name + "): " + why;
      if (!bin.pclntab().typesStart())
        return "it holds an interface (" + t->name + ") and the binary's moduledata (where type records start) was not found";
      return {};
    }
    case Kind::Func:
    case Kind::Bool:
    case Kind::Float32:
    case Kind::Float64:
    case Kind::Complex64:
    case Kind::Complex128:
    case Kind::String:
    case Kind::UnsafePointer: return {};
    default:
      if (isInteger(t->kind)) return {};
      return "its type " + t->name + " is not one goscope lays out itself";
  }
}

// The target's memory for one read of a value: whole pages, each read once
// (a map's buckets and the strings they point to share pages), so one pass
// costs a few process_vm_readv calls; a page that cannot be read whole is
// read word by word.
class PassMemory {
 public:
  explicit PassMemory(const Process& p) : p_(p) {}

  Result<void> read(uint64_t addr, void* out, size_t len) {
    auto* dst = static_cast<uint8_t*>(out);
    while (len > 0) {
      const uint64_t page = addr & ~(kPage - 1);
      const size_t off = addr - page;
      const size_t n = std::min<size_t>(len, kPage - off);
      auto it = pages_.find(page);
      if (it == pages_.end()) {
        auto whole = p_.readMemory(page, kPage);
        if (!whole) {
          if (whole.error().kind == ErrorKind::TargetGone || whole.error().kind == ErrorKind::Permission)
            return fail(whole.error());
          auto exact = p_.readMemory(addr, n);  // part of a page may be mapped
          if (!exact) return fail(exact.error());
          std::memcpy(dst, exact->data(), n);
          addr += n, dst += n, len -= n;
          continue;
        }
        it = pages_.emplace(page, std::move(*whole)).first;
      }
      std::memcpy(dst, it->second.data() + off, n);
      addr += n, dst += n, len -= n;
    }
    return {};
  }

  Result<uint64_t> word(uint64_t addr, size_t size = 8) {
    uint64_t x = 0;
    if (auto r = read(addr, &x, std::min<size_t>(size, 8)); !r) return fail(r.error());
    return x;
  }

 private:
  static constexpr uint64_t kPage = 4096;
  const Process& p_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};

// Bounds against a header read while it was being rewritten (or garbage):
// no real map has more buckets, tables or overflow hops than these.
constexpr uint64_t kMaxBucketShift = 40;
constexpr uint64_t kMaxScannedBuckets = uint64_t(1) << 22;
constexpr int64_t kMaxDirLen = int64_t(1) << 24;
constexpr uint64_t kMaxNesting = 64;  // loads inside loads, whatever the depth rules say

// Loads one value by Delve's rules (docs/delve.md "What a read loads").
class Loader {
 public:
  Loader(const GoBinary& bin, const DwarfInfo& d, const Process& p, uint64_t bias, const DirectReadLimits& lim)
      : bin_(bin), d_(d), mem_(p), bias_(bias), lim_(lim) {
    if (auto t = bin.pclntab().typesStart()) typesBase_ = *t + bias;
  }

  // Types an interface's dynamic value needs that this DWARF does not have
  // yet: read them (GoBinary::dwarfGlobals) and load again.
  const std::set<std::string>& missingTypes() const { return missing_; }
  // Values this read could not follow into memory: in a Go program a
  // pointer to unmapped memory is one read while it was being written (a
  // string header's two words, a writer preempted between them).
  int faults() const { return faults_; }

  // Fails only when the process is gone or unreadable as a whole; a bad
  // pointer inside the value marks that part unreadable, as Delve does.
  Result<Value> load(const std::string& name, const std::string& typeName, uint64_t addr, int level) {
    Value v;
    v.name = name;
    v.type = typeName;
    const GoType* t = d_.type(typeName);
    if (!t) return Value::missing("unreadable: type " + typeName + " not in DWARF", name);
    if (++nesting_ > kMaxNesting) {
      --nesting_;
      return cut(std::move(v), *t, addr);
    }
    auto r = fill(v, *t, addr, level);
    --nesting_;
    if (!r) {
      if (r.error().kind == ErrorKind::TargetGone || r.error().kind == ErrorKind::Permission) return fail(r.error());
      if (r.error().message.starts_with("reading memory of PID")) faults_++;
      Value bad = Value::missing("unreadable: " + r.error().message, name);
      bad.type = typeName;
      return bad;
    }
    return v;
  }

 private:
  // A value Delve would not load past its depth (an interface's dynamic
  // value, a map's entries): cut, as values_from_delve.cpp shows Delve's.
  Value cut(Value v, const GoType& t, uint64_t addr) {
    v.address = addr;
    switch (t.kind) {
      case Kind::Slice: {
        auto base = mem_.word(addr), len = mem_.word(addr + 8), cap = mem_.word(addr + 16);
        v.kind = Value::Kind::Slice;
        if (base && len && cap) {
          v.address = *base;
          v.len = *len;
          v.cap = *cap;
        }
        v.elementsUnavailable = "past Delve's load depth";
        return v;
      }
      case Kind::Struct: v.kind = Value::Kind::Struct; break;
      case Kind::Array: v.kind = Value::Kind::Array; break;
      case Kind::Map: v.kind = Value::Kind::Map; break;
      case Kind::Pointer: v.kind = Value::Kind::Pointer; break;
      case Kind::Interface: v.kind = Value::Kind::Interface; break;
      case Kind::Chan: v.kind = Value::Kind::Chan; break;
      case Kind::Func: v.kind = Value::Kind::Func; break;
      case Kind::String: v.kind = Value::Kind::String; break;
      case Kind::Bool: v.kind = Value::Kind::Bool; break;
      case Kind::Float32:
      case Kind::Float64: v.kind = Value::Kind::Float; break;
      case Kind::Complex64:
      case Kind::Complex128: v.kind = Value::Kind::Complex; break;
      case Kind::UnsafePointer: v.kind = Value::Kind::UnsafePointer; break;
      default: v.kind = isSignedKind(t.kind) ? Value::Kind::Int : Value::Kind::Uint; break;
    }
    v.elided = true;
    return v;
  }

  Result<void> fill(Value& v, const GoType& t, uint64_t addr, int level) {
    if (isInteger(t.kind) || t.kind == Kind::Bool || t.kind == Kind::UnsafePointer) {
      auto x = mem_.word(addr, t.size);
      if (!x) return fail(x.error());
      if (t.kind == Kind::Bool) {
        v.kind = Value::Kind::Bool;
        v.boolean = (*x & 0xff) != 0;
      } else if (t.kind == Kind::UnsafePointer) {
        v.kind = Value::Kind::UnsafePointer;
        v.address = *x;
        v.nil = *x == 0;
      } else if (isSignedKind(t.kind)) {
        int shift = 64 - 8 * static_cast<int>(t.size);
        v.kind = Value::Kind::Int;
        v.i = static_cast<int64_t>(*x << shift) >> shift;  // sign-extend
      } else {
        v.kind = Value::Kind::Uint;
        v.u = *x;
      }
      return {};
    }
    switch (t.kind) {
      case Kind::Float32:
      case Kind::Float64: return readFloat(v, addr, t.kind == Kind::Float32 ? 4 : 8, v.f);
      case Kind::Complex64:
      case Kind::Complex128: {
        const size_t half = t.kind == Kind::Complex64 ? 4 : 8;
        if (auto r = readFloat(v, addr, half, v.f); !r) return r;
        if (auto r = readFloat(v, addr + half, half, v.imag); !r) return r;
        v.kind = Value::Kind::Complex;
        return {};
      }
      case Kind::String: {
        auto ptr = mem_.word(addr);
        auto len = ptr ? mem_.word(addr + 8) : ptr;
        if (!len) return fail(len.error());
        if (static_cast<int64_t>(*len) < 0) return fail(ErrorKind::Internal, "negative string length");
        v.kind = Value::Kind::String;
        v.len = *len;
        size_t n = std::min<uint64_t>(*len, lim_.maxString);
        if (n == 0) return {};
        v.text.resize(n);
        if (auto r = mem_.read(*ptr, v.text.data(), n); !r) return fail(r.error());
        return {};
      }
      case Kind::Struct: {
        v.kind = Value::Kind::Struct;
        if (level > lim_.maxDepth) {  // as Delve past MaxVariableRecurse
          v.elided = !t.fields.empty();
          v.address = addr;
          return {};
        }
        for (const auto& f : t.fields) {
          auto c = load(f.name, f.type, addr + f.offset, level + 1);
          if (!c) return fail(c.error());
          v.children.push_back(std::move(*c));
        }
        return {};
      }
      case Kind::Array:
        v.kind = Value::Kind::Array;
        return elements(v, t, addr, t.count, level);
      case Kind::Slice: {
        auto base = mem_.word(addr);
        auto len = base ? mem_.word(addr + 8) : base;
        auto cap = len ? mem_.word(addr + 16) : len;
        if (!cap) return fail(cap.error());
        v.kind = Value::Kind::Slice;
        v.address = *base;
        v.cap = *cap;
        v.nil = *base == 0 && *len == 0;
        if (static_cast<int64_t>(*len) < 0) return fail(ErrorKind::Internal, "Negative array length");
        if (*base == 0 && *len > 0) return fail(ErrorKind::Internal, "non-zero length array with nil base");
        return elements(v, t, *base, *len, level);
      }
      case Kind::Pointer: return pointer(v, t, addr, level);
      case Kind::Map: return map(v, t, addr, level);
      case Kind::Interface: return iface(v, t, addr, level);
      case Kind::Chan: {
        auto x = mem_.word(addr);
        if (!x) return fail(x.error());
        v.kind = Value::Kind::Chan;
        v.address = *x;
        v.nil = *x == 0;
        if (v.nil) return {};
        const GoType::Field *q = nullptr, *c = nullptr;
        if (auto why = chanLayout(d_, t, q, c); !why.empty()) return fail(ErrorKind::BadTarget, why);
        auto len = mem_.word(*x + q->offset), cap = len ? mem_.word(*x + c->offset) : len;
        if (!cap) return fail(cap.error());
        v.len = *len;
        v.cap = *cap;
        return {};
      }
      case Kind::Func: {
        // A func value points to a funcval whose first word is the code
        // (runtime.funcval; docs/go-runtime.md "Funcs").
        auto fv = mem_.word(addr);
        if (!fv) return fail(fv.error());
        v.kind = Value::Kind::Func;
        v.nil = *fv == 0;
        if (v.nil) return {};
        auto pc = mem_.word(*fv);
        if (!pc) return fail(pc.error());
        v.address = *pc;
        const GoFunction* fn = bin_.pclntab().functionAt(*pc - bias_);
        if (!fn || fn->entry != *pc - bias_) return fail(ErrorKind::Internal, "could not find function for " + hex(*pc));
        v.text = fn->name;
        return {};
      }
      default: return fail(ErrorKind::Usage, "cannot read a " + t.name + " directly");
    }
  }

  static std::string hex(uint64_t x) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(x));
    return buf;
  }

  Result<void> readFloat(Value& v, uint64_t addr, size_t size, double& out) {
    auto x = mem_.word(addr, size);
    if (!x) return fail(x.error());
    v.kind = Value::Kind::Float;
    if (size == 4) {
      float f;
      uint32_t bits = static_cast<uint32_t>(*x);
      std::memcpy(&f, &bits, 4);
      out = f;
    } else {
      std::memcpy(&out, &*x, 8);
    }
    return {};
  }

  // Delve follows a pointer without counting a level, except into an
  // interface or another pointer (then one level, and a pointer to a
  // pointer past the depth is left unfollowed).
  Result<void> pointer(Value& v, const GoType& t, uint64_t addr, int level) {
    auto x = mem_.word(addr);
    if (!x) return fail(x.error());
    v.kind = Value::Kind::Pointer;
    v.address = *x;
    v.nil = *x == 0;
    if (v.nil) return {};
    const GoType* e = d_.type(t.elem);
    int next = level;
    if (e && e->kind == Kind::Interface) {
      next++;
    } else if (e && e->kind == Kind::Pointer) {
      if (level > lim_.maxDepth) return {};  // the address says it
      next++;
    }
    auto c = load("", t.elem, *x, next);
    if (!c) return fail(c.error());
    v.children.push_back(std::move(*c));
    return {};
  }

  Result<void> elements(Value& v, const GoType& t, uint64_t base, uint64_t len, int level) {
    v.len = len;
    const GoType* e = d_.type(t.elem);
    if (!e) return {};
    uint64_t n = std::min<uint64_t>(len, lim_.maxElems);
    for (uint64_t i = 0; i < n; i++) {
      auto c = load("", t.elem, base + i * e->size, level + 1);
      if (!c) return fail(c.error());
      v.children.push_back(std::move(*c));
    }
    return {};
  }

  // One entry: the key and value, loaded one level down. A key or value
  // the runtime stores behind a pointer (larger than 128 bytes) is
  // followed, as Delve does.
  Result<bool> entry(Value& v, const MapLayout& L, const GoType& m, uint64_t kaddr, uint64_t vaddr, int level) {
    auto one = [&](const std::string& stored, const std::string& declared, uint64_t a) -> Result<Value> {
      if (stored != declared) {
        auto p = mem_.word(a);
        if (!p) return fail(p.error());
        a = *p;
      }
      return load("", declared, a, level + 1);
    };
    auto k = one(L.keyType, m.key, kaddr);
    if (!k) return fail(k.error());
    auto e = one(L.elemType, m.elem, vaddr);
    if (!e) return fail(e.error());
    v.children.push_back(std::move(*k));
    v.children.push_back(std::move(*e));
    return v.children.size() / 2 < std::min<uint64_t>(lim_.maxElems, v.len);
  }

  Result<void> map(Value& v, const GoType& t, uint64_t addr, int level) {
    auto h = mem_.word(addr);
    if (!h) return fail(h.error());
    v.kind = Value::Kind::Map;
    v.address = *h;
    if (*h == 0) {
      v.nil = true;
      return {};
    }
    MapLayout L;
    if (auto why = mapLayout(d_, t, L); !why.empty()) return fail(ErrorKind::BadTarget, why);
    auto len = L.swiss ? mem_.word(*h + L.used->offset, 8) : mem_.word(*h + L.count->offset, 8);
    if (!len) return fail(len.error());
    v.len = *len;
    if (level > lim_.maxDepth) {  // Delve counts the entries only
      if (v.len > 0) {
        v.elided = true;
        v.address = addr;
      }
      return {};
    }
    if (v.len == 0 || lim_.maxElems == 0) return {};
    return L.swiss ? swissEntries(v, L, t, *h, level) : bucketEntries(v, L, t, *h, level);
  }

  // Delve's order (pkg/proc mapIteratorClassic): buckets in index order,
  // each followed by its overflow chain; while the map grows, a bucket not
  // yet evacuated is read from its old bucket (once, from the first of the
  // two new buckets it splits into).
  Result<void> bucketEntries(Value& v, const MapLayout& L, const GoType& m, uint64_t h, int level) {
    auto bshift = mem_.word(h + L.b->offset, 1);
    auto buckets = bshift ? mem_.word(h + L.buckets->offset) : bshift;
    auto old = buckets ? mem_.word(h + L.oldbuckets->offset) : buckets;
    if (!old) return fail(old.error());
    if (*bshift > kMaxBucketShift) return fail(ErrorKind::Internal, "implausible map header (B=" + std::to_string(*bshift) + ")");
    const uint64_t numBuckets = uint64_t(1) << *bshift;
    const uint64_t oldmask = *bshift == 0 ? ~uint64_t(0) : (uint64_t(1) << (*bshift - 1)) - 1;
    const uint64_t stride = L.bucket->size;
    const uint64_t slots = d_.type(L.tophash->type) ? d_.type(L.tophash->type)->count : 8;
    auto tophashAt = [&](uint64_t b, uint64_t i) { return mem_.word(b + L.tophash->offset + i, 1); };
    // Go 1.12+: 0 and 1 are empty cells, 2..4 evacuated, 5 the least real hash.
    auto evacuated = [&](uint64_t b) -> Result<bool> {
      if (b == 0) return true;
      auto t0 = tophashAt(b, 0);
      if (!t0) return true;
      return *t0 > 1 && *t0 < 5;
    };
    uint64_t bidx = 0, overflow = 0, scanned = 0;
    for (;;) {
      uint64_t b = 0;
      if (overflow) {
        b = overflow;
      } else {
        while (bidx < numBuckets) {
          b = *buckets + stride * bidx;
          if (*old == 0) break;
          const uint64_t oldbidx = bidx & oldmask;
          const uint64_t oldb = *old + stride * oldbidx;
          auto ev = evacuated(oldb);
          if (!ev) return fail(ev.error());
          if (*ev) break;
          if (oldbidx == bidx) {
            b = oldb;
            break;
          }
          b = 0;
          bidx++;
        }
        if (b == 0) return {};
        bidx++;
      }
      if (++scanned > kMaxScannedBuckets) return fail(ErrorKind::Internal, "implausible map: too many buckets");
      for (uint64_t i = 0; i < slots; i++) {
        auto th = tophashAt(b, i);
        if (!th) return fail(th.error());
        if (*th == 0 || *th == 1) continue;
        auto more = entry(v, L, m, b + L.keys->offset + i * L.keyStride, b + L.values->offset + i * L.elemStride, level);
        if (!more) return fail(more.error());
        if (!*more) return {};
      }
      auto of = mem_.word(b + L.overflow->offset);
      if (!of) return fail(of.error());
      overflow = *of;
    }
  }

  // Delve's order (pkg/proc mapIteratorSwiss): the directory's tables in
  // order, a table listed under several directory entries read at the one
  // equal to its index; groups in order; full slots (control byte's high
  // bit clear) in order. A small map (dirLen 0) is one group at dirPtr.
  Result<void> swissEntries(Value& v, const MapLayout& L, const GoType& m, uint64_t h, int level) {
    auto dirPtr = mem_.word(h + L.dirPtr->offset);
    auto dirLenW = dirPtr ? mem_.word(h + L.dirLen->offset) : dirPtr;
    if (!dirLenW) return fail(dirLenW.error());
    int64_t dirLen = static_cast<int64_t>(*dirLenW);
    if (dirLen > kMaxDirLen) return fail(ErrorKind::Internal, "implausible map header (dirLen=" + std::to_string(dirLen) + ")");
    const uint64_t groupSize = L.group->size;
    auto groupEntries = [&](uint64_t g) -> Result<bool> {
      auto ctrl = mem_.word(g + L.ctrl->offset, 8);
      if (!ctrl) return fail(ctrl.error());
      for (uint64_t i = 0; i < 8; i++) {
        if ((*ctrl >> (8 * i)) & 0x80) continue;  // empty or deleted
        uint64_t k = 0, e = 0;
        if (L.slots) {
          const uint64_t s = g + L.slots->offset + i * L.slotSize;
          k = s + L.slotKey->offset;
          e = s + L.slotElem->offset;
        } else {
          k = g + L.groupKeys->offset + i * L.keyStride;
          e = g + L.groupElems->offset + i * L.elemStride;
        }
        auto more = entry(v, L, m, k, e, level);
        if (!more) return fail(more.error());
        if (!*more) return false;
      }
      return true;
    };
    if (dirLen <= 0) {
      if (*dirPtr == 0) return {};
      auto more = groupEntries(*dirPtr);
      if (!more) return fail(more.error());
      return {};
    }
    uint64_t scanned = 0;
    for (int64_t dirIdx = 0; dirIdx < dirLen; dirIdx++) {
      auto tab = mem_.word(*dirPtr + 8 * static_cast<uint64_t>(dirIdx));
      if (!tab) return fail(tab.error());
      if (*tab == 0) return fail(ErrorKind::Internal, "could not load one of the tables");
      auto index = mem_.word(*tab + L.tableIndex->offset);
      if (!index) return fail(index.error());
      if (static_cast<int64_t>(*index) != dirIdx) continue;
      const uint64_t groupsAt = *tab + L.tableGroups->offset;
      auto data = mem_.word(groupsAt + L.groupsData->offset);
      auto mask = data ? mem_.word(groupsAt + L.lengthMask->offset) : data;
      if (!mask) return fail(mask.error());
      if (*data == 0) return fail(ErrorKind::Internal, "bad swiss map, groups pointer is nil");
      if (*mask >= kMaxScannedBuckets) return fail(ErrorKind::Internal, "implausible Swiss table (lengthMask)");
      for (uint64_t gi = 0; gi <= *mask; gi++) {
        if (++scanned > kMaxScannedBuckets) return fail(ErrorKind::Internal, "implausible map: too many groups");
        auto more = groupEntries(*data + gi * groupSize);
        if (!more) return fail(more.error());
        if (!*more) return {};
      }
    }
    return {};
  }

  // Delve's rule: the dynamic value is loaded at the interface's own level,
  // unless that is past the depth (then it is cut).
  Result<void> iface(Value& v, const GoType& t, uint64_t addr, int level) {
    auto w0 = mem_.word(addr);
    if (!w0) return fail(w0.error());
    v.kind = Value::Kind::Interface;
    if (*w0 == 0) {
      v.nil = true;
      return {};
    }
    IfaceLayout L;
    if (auto why = ifaceLayout(d_, t, L); !why.empty()) return fail(ErrorKind::BadTarget, why);
    uint64_t typeWord = *w0;
    if (L.viaItab) {
      auto tw = mem_.word(*w0 + L.typeInItab);
      if (!tw) return fail(tw.error());
      typeWord = *tw;
    }
    if (!typesBase_ || typeWord < *typesBase_) return fail(ErrorKind::Internal, "invalid interface type");
    const std::string* dyn = d_.typeAtRuntimeOffset(typeWord - *typesBase_);
    if (!dyn) return fail(ErrorKind::Internal, "no DWARF type for the runtime type at " + hex(typeWord));
    const GoType* dt = d_.type(*dyn);
    if (!dt) {
      missing_.insert(*dyn);
      return fail(ErrorKind::Internal, "type " + *dyn + " not read yet");
    }
    uint64_t valueAt = addr + 8;
    if (!directIface(d_, dt)) {
      auto p = mem_.word(addr + 8);
      if (!p) return fail(p.error());
      valueAt = *p;
    }
    v.dynamicType = *dyn;
    v.address = valueAt;
    if (level > lim_.maxDepth) {
      Value c;
      c.name = "data";
      c.type = *dyn;
      v.children.push_back(cut(std::move(c), *dt, valueAt));
      return {};
    }
    auto c = load("data", *dyn, valueAt, level);
    if (!c) return fail(c.error());
    v.children.push_back(std::move(*c));
    return {};
  }

  const GoBinary& bin_;
  const DwarfInfo& d_;
  PassMemory mem_;
  uint64_t bias_;
  DirectReadLimits lim_;
  std::optional<uint64_t> typesBase_;
  std::set<std::string> missing_;
  uint64_t nesting_ = 0;
  int faults_ = 0;
};

bool sameFloat(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Two reads agree: every field, every element (floats bit for bit).
bool same(const Value& a, const Value& b) {
  if (a.kind != b.kind || a.name != b.name || a.type != b.type || a.boolean != b.boolean || a.i != b.i || a.u != b.u ||
      !sameFloat(a.f, b.f) || !sameFloat(a.imag, b.imag) || a.text != b.text || a.address != b.address ||
      a.nil != b.nil || a.len != b.len || a.cap != b.cap || a.dynamicType != b.dynamicType || a.elided != b.elided ||
      a.unavailable != b.unavailable || a.elementsUnavailable != b.elementsUnavailable ||
      a.children.size() != b.children.size())
    return false;
  for (size_t i = 0; i < a.children.size(); i++)
    if (!same(a.children[i], b.children[i])) return false;
  return true;
}

}  // namespace

namespace {

// Where `path` is and its type, reading the DWARF of the types on its way
// as they are needed. `*d` is the DWARF that has them all, on success.
SelectorResolution resolveWithTypes(const GoBinary& bin, const std::string& path, const DwarfInfo*& d) {
  std::vector<std::string> asked = variableCandidates(path);
  for (int round = 0; round < 16; round++) {
    d = bin.dwarfGlobals(asked);
    if (!d) return {std::nullopt, "the binary has no DWARF: variable types are unknown", {}};
    auto r = resolveSelector(*d, path);
    if (r.missingType.empty()) return r;
    if (std::find(asked.begin(), asked.end(), r.missingType) != asked.end())
      return {std::nullopt, path + ": its type " + r.missingType + " is not in DWARF", {}};
    asked.push_back(r.missingType);
  }
  return {std::nullopt, path + ": its fields nest deeper than the direct read follows", {}};
}

}  // namespace

DirectReadCheck checkDirectRead(const GoBinary& bin, const std::string& name) {
  auto sel = parseReadSelector(name);
  if (!sel) return {std::nullopt, name + " is not a package variable (an expression, or unknown): Delve evaluates it"};
  const DwarfInfo* d = nullptr;
  auto r = resolveWithTypes(bin, sel->path, d);
  if (r.noSuchField)
    return {Error{ErrorKind::NoMatch, r.why + " in " + bin.name(), "check the spelling: its DWARF lists the struct's fields"},
            r.why};
  if (!r.place) return {std::nullopt, r.why};
  if (!sel->builtin.empty()) {
    const GoType* t = d->type(r.place->type);
    if (!t || !builtinApplies(sel->builtin, t->kind))
      return {std::nullopt, name + ": " + sel->builtin + " of a " + r.place->type + ": Delve evaluates it"};
  }
  std::set<std::string> seen;
  if (std::string why = refusal(bin, *d, r.place->type, seen); !why.empty()) return {std::nullopt, name + ": " + why};
  return {};
}

std::string directReadRefusal(const GoBinary& bin, const std::string& name) {
  return checkDirectRead(bin, name).refusal;
}

Result<Value> readGlobalDirect(const GoBinary& bin, const Process& proc, uint64_t loadBias,
                                       const std::string& name, const DirectReadLimits& limits) {
  auto sel = parseReadSelector(name);
  if (!sel) return fail(ErrorKind::Usage, name + " is not a package variable (an expression, or unknown)");
  if (!sel->builtin.empty()) {
    // len(X), cap(X): X read as a whole value is (the same agreement of two
    // reads), then its header's count.
    auto inner = readGlobalDirect(bin, proc, loadBias, sel->path, limits);
    if (!inner) return inner;
    if (inner->kind == Value::Kind::Unavailable) {
      inner->name = name;
      return inner;
    }
    Value n;
    n.kind = Value::Kind::Int;
    n.name = name;
    n.type = "int";
    // An array's capacity is its length (the value keeps no cap of its own).
    const uint64_t cap = inner->kind == Value::Kind::Array ? inner->len : inner->cap;
    n.i = static_cast<int64_t>(sel->builtin == "len" ? inner->len : cap);
    return n;
  }
  const DwarfInfo* d = nullptr;
  auto place = resolveWithTypes(bin, sel->path, d);
  if (!place.place) {
    if (!d) return fail(ErrorKind::BadTarget, bin.name() + " has no DWARF: " + name + "'s type is unknown");
    if (place.why.find("is not a package variable") != std::string::npos)
      if (auto g = findGlobal(bin, sel->path); !g) return fail(g.error());  // its error says unknown or stripped
    return fail(ErrorKind::NoMatch, place.why);
  }
  std::vector<std::string> asked = variableCandidates(sel->path);
  const std::string type = place.place->type;
  const uint64_t addr = place.place->address + loadBias;
  // An interface's dynamic type is known only once read: its DWARF is read
  // then (with every type it reaches), and the value read again.
  for (int round = 0;; round++) {
    std::optional<Value> previous;
    bool missing = false;
    int faulted = 0;
    for (int attempt = 0; attempt < std::max(2, limits.attempts); attempt++) {
      Loader loader(bin, *d, proc, loadBias, limits);
      auto v = loader.load(name, type, addr, 0);
      if (!v) return v.failure();
      if (!loader.missingTypes().empty() && round < 8) {
        for (const auto& t : loader.missingTypes()) asked.push_back(t);
        missing = true;
        break;
      }
      // One word (a number, a bool) is read whole by one process_vm_readv:
      // a counter written all the time is still a value, not "changed".
      if (const GoType* t = d->type(type); t && t->size <= 8 && (isInteger(t->kind) || t->kind == Kind::Bool ||
                                                                  t->kind == Kind::Float32 || t->kind == Kind::Float64 ||
                                                                  t->kind == Kind::Complex64 || t->kind == Kind::UnsafePointer))
        return std::move(*v);
      // Two reads that agree on a torn pointer prove nothing: read again.
      if (loader.faults() > 0) {
        faulted++;
        previous.reset();
        continue;
      }
      if (previous && same(*previous, *v)) return std::move(*v);
      previous = std::move(*v);
    }
    if (missing) {
      d = bin.dwarfGlobals(asked);
      if (!d) return fail(ErrorKind::BadTarget, bin.name() + ": DWARF became unreadable");
      continue;
    }
    const int attempts = std::max(2, limits.attempts);
    Value changed = Value::missing(
        faulted > 0 ? "changed during the read: " + std::to_string(faulted) + " of " + std::to_string(attempts) +
                          " reads met a pointer to unmapped memory (one being written), the others disagreed"
                    : "changed during the read: " + std::to_string(attempts) + " reads in a row disagreed",
        name);
    changed.type = type;
    return changed;
  }
}

}  // namespace goscope
