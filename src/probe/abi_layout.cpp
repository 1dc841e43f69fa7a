#include "probe/abi_layout.hpp"

#include "probe/signature_parse.hpp"

namespace goscope {
namespace {

using K = GoType::Kind;

constexpr const char* kIntRegNames[kGoIntRegs] = {"RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11"};

uint64_t alignUp(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// Register assignment of one value (abi-internal.md, "Register-assignment of
// a value V of underlying type T"). On failure the caller restores I and FP
// and drops the parts: a value is passed entirely in registers or entirely
// on the stack.
struct RegAssigner {
  unsigned intUsed = 0, floatUsed = 0;
  unsigned intLimit = kGoIntRegs, floatLimit = kGoFloatRegs;  // 0, 0 for ABI0
  std::vector<ValuePart> parts;

  bool intWord(uint64_t size, K kind, uint64_t memOffset, std::string path) {
    if (intUsed >= intLimit) return false;
    parts.push_back(
        {ValuePart::IntReg, intUsed++, 0, static_cast<uint32_t>(size), std::move(path), kind, memOffset});
    return true;
  }
  bool floatWord(uint64_t size, K kind, uint64_t memOffset, std::string path) {
    if (floatUsed >= floatLimit) return false;
    parts.push_back(
        {ValuePart::FloatReg, floatUsed++, 0, static_cast<uint32_t>(size), std::move(path), kind, memOffset});
    return true;
  }

  bool assign(const TypeShape& t, uint64_t mem, const std::string& path) {
    switch (t.kind) {
      case K::Bool: case K::Int: case K::Int8: case K::Int16: case K::Int32: case K::Int64:
      case K::Uint: case K::Uint8: case K::Uint16: case K::Uint32: case K::Uint64: case K::Uintptr:
      case K::Pointer: case K::UnsafePointer: case K::Map: case K::Chan: case K::Func:
        return intWord(t.size, t.kind, mem, path);
      case K::Float32: case K::Float64:
        return floatWord(t.size, t.kind, mem, path);
      case K::Complex64:
        return floatWord(4, K::Float32, mem, path + ".real") && floatWord(4, K::Float32, mem + 4, path + ".imag");
      case K::Complex128:
        return floatWord(8, K::Float64, mem, path + ".real") && floatWord(8, K::Float64, mem + 8, path + ".imag");
      case K::String:
        return intWord(8, K::UnsafePointer, mem, path + ".ptr") && intWord(8, K::Int, mem + 8, path + ".len");
      case K::Slice:
        return intWord(8, K::UnsafePointer, mem, path + ".ptr") && intWord(8, K::Int, mem + 8, path + ".len") &&
               intWord(8, K::Int, mem + 16, path + ".cap");
      case K::Interface:
        return intWord(8, K::UnsafePointer, mem, path + (t.emptyInterface ? ".type" : ".itab")) &&
               intWord(8, K::UnsafePointer, mem + 8, path + ".data");
      case K::Struct:
        for (const auto& f : t.fields)
          if (!assign(*f.type, mem + f.offset, path + "." + f.name)) return false;
        return true;
      case K::Array:
        // Arrays of more than one element go to the stack: registers cannot be indexed.
        if (t.count == 0) return true;
        if (t.count > 1 || !t.elem) return false;
        return assign(*t.elem, mem, path + "[0]");
      default:
        return false;
    }
  }
};

}  // namespace

std::string describePart(const ValuePart& p) {
  switch (p.kind) {
    case ValuePart::IntReg: return p.reg < kGoIntRegs ? kIntRegNames[p.reg] : "R?";
    case ValuePart::FloatReg: return "X" + std::to_string(p.reg);
    case ValuePart::Stack: return "RSP+" + std::to_string(p.stackOffset);
  }
  return "?";
}

std::string describeLayout(const ValueLayout& v) {
  std::string out = v.name + " " + v.type + ":";
  if (!v.problem.empty()) return out + " unknown (" + v.problem + ")";
  if (v.parts.empty()) return out + " (no data)";
  for (const auto& p : v.parts) {
    out += " " + describePart(p);
    if (!p.path.empty()) out += "(" + p.path + ")";
  }
  return out;
}

std::vector<ValueLayout> assignLayout(const std::vector<ParamSpec>& params, const std::vector<ShapePtr>& shapes,
                                      const std::vector<std::string>& problems, bool abi0) {
  std::vector<ValueLayout> out;
  RegAssigner regs;
  if (abi0) regs.intLimit = regs.floatLimit = 0;
  uint64_t stack = 0;  // offset in the argument area, which starts at RSP+8
  // Once a type is unknown, the registers and stack slots after it in the
  // same list are unknown too; results' stack slots follow the arguments'.
  std::string argsPoisoned, groupPoisoned;
  bool inResults = false;

  for (size_t i = 0; i < params.size(); i++) {
    const ParamSpec& p = params[i];
    if (p.isResult && !inResults) {
      // Between arguments and results: pointer-align the stack, restart the registers.
      inResults = true;
      stack = alignUp(stack, 8);
      regs.intUsed = regs.floatUsed = 0;
      argsPoisoned = groupPoisoned;
      groupPoisoned.clear();
    }
    ValueLayout v;
    v.name = p.name;
    v.type = p.type;
    v.isResult = p.isResult;
    v.shape = i < shapes.size() ? shapes[i] : nullptr;
    if (!v.shape) {
      v.problem = i < problems.size() && !problems[i].empty() ? problems[i] : "unknown type " + p.type;
      if (groupPoisoned.empty()) groupPoisoned = p.name + " " + p.type;
      out.push_back(std::move(v));
      continue;
    }
    if (!groupPoisoned.empty()) {
      v.problem = "place unknown: it follows " + groupPoisoned + ", whose type is unknown";
      out.push_back(std::move(v));
      continue;
    }
    const TypeShape& t = *v.shape;
    bool inRegs = false;
    if (t.size > 0) {  // zero-sized values are "stack-assigned" (they only align the stack)
      RegAssigner trial = regs;
      trial.parts.clear();
      if (trial.assign(t, 0, "")) {
        v.parts = std::move(trial.parts);
        regs.intUsed = trial.intUsed;
        regs.floatUsed = trial.floatUsed;
        inRegs = true;
      }
    }
    if (!inRegs) {
      v.onStack = true;
      if (!argsPoisoned.empty() && p.isResult) {
        v.problem = "stack slot unknown: it follows " + argsPoisoned + ", whose type is unknown";
      } else {
        stack = alignUp(stack, t.align);
        if (t.size > 0)
          v.parts.push_back({ValuePart::Stack, 0, static_cast<int64_t>(8 + stack), static_cast<uint32_t>(t.size), "",
                             t.kind, 0});
        stack += t.size;
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<uint64_t> argumentFrameSize(const std::vector<ValueLayout>& layout) {
  uint64_t size = 0, spill = 0;
  bool resultsStarted = false;
  for (const auto& v : layout) {
    if (!v.shape || !v.problem.empty()) return std::nullopt;
    if (v.isResult && !resultsStarted) {
      resultsStarted = true;
      size = alignUp(size, 8);
    }
    if (v.onStack) size = alignUp(size, v.shape->align) + v.shape->size;
    else if (!v.isResult) spill = alignUp(spill, v.shape->align) + v.shape->size;
  }
  return alignUp(alignUp(size, 8) + spill, 8);
}

bool takesDictionary(std::string_view name) {
  size_t open = name.find('[');
  if (open == std::string_view::npos) return false;
  int depth = 0;
  size_t close = std::string_view::npos;
  for (size_t i = open; i < name.size() && close == std::string_view::npos; i++) {
    if (name[i] == '[' || name[i] == '(' || name[i] == '{') depth++;
    else if ((name[i] == ']' || name[i] == ')' || name[i] == '}') && --depth == 0) close = i;
  }
  if (close == std::string_view::npos) return false;
  if (name.substr(open, close - open).find("go.shape.") == std::string_view::npos) return false;
  std::string_view tail = name.substr(close + 1);
  if (tail.empty()) return true;  // main.Map[go.shape.int_0]
  // main.(*Stack[go.shape.int_0]).Push or main.Stack[go.shape.int_0].Push: a
  // method; anything after the method name (`.func1`) is a closure.
  // The closures the compiler names `funcN` are not methods.
  bool pointerRecv = tail.starts_with(")");
  if (pointerRecv) tail.remove_prefix(1);
  if (!tail.starts_with(".") || tail.substr(1).find('.') != std::string_view::npos) return false;
  std::string_view m = tail.substr(1);
  bool closure = !pointerRecv && m.starts_with("func") && m.size() > 4 &&
                 m.find_first_not_of("0123456789", 4) == std::string_view::npos;
  return !closure;
}

namespace {

// `pkg.(*T).M` -> `*pkg.T`, `pkg.T.M` -> `pkg.T` when DWARF knows pkg.T as a
// type; nullopt for plain functions and closures (`pkg.f.func1`).
std::optional<std::string> receiverType(const TypeLookup& types, std::string_view fn) {
  // `T.M-fm` is a method value: a closure whose receiver is in its context.
  if (fn.ends_with("-fm")) return std::nullopt;
  size_t dot = fn.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  std::string_view recv = fn.substr(0, dot);
  if (recv.ends_with(")")) {  // pkg.(*T)
    size_t open = recv.find(".(*");
    if (open == std::string_view::npos) return std::nullopt;
    std::string base =
        std::string(recv.substr(0, open + 1)) + std::string(recv.substr(open + 3, recv.size() - open - 4));
    if (!types || !types(base)) return std::nullopt;
    return "*" + base;
  }
  if (recv.rfind('/') != std::string_view::npos && recv.find('.', recv.rfind('/')) == std::string_view::npos)
    return std::nullopt;  // `pkg/path.f`: recv is a package, not a type
  if (!types || !types(recv)) return std::nullopt;
  return std::string(recv);
}

// Functions compiled with ABI0 (Go functions called from assembly, e.g.
// runtime.newproc, reflect.callMethod): every argument arrives on the stack.
// DWARF is the only hint the file has: all entry locations are stack slots.
bool looksAbi0(const DwarfFunction& fn, const std::vector<ValueLayout>& internal) {
  bool anyInRegs = false, anyLocation = false;
  for (const auto& v : internal)
    if (!v.isResult && !v.onStack && !v.parts.empty()) anyInRegs = true;
  for (const auto& p : fn.params) {
    if (p.isResult) continue;
    const LocationRange* loc = locationAtEntry(p, fn.lowPc);
    if (!loc || loc->pieces.empty()) continue;
    anyLocation = true;
    for (const auto& piece : loc->pieces)
      if (piece.kind == LocationPiece::Kind::Register) return false;
  }
  return anyInRegs && anyLocation;
}

}  // namespace

Result<std::vector<ValueLayout>> layoutFunction(const DwarfInfo& dwarf, const DwarfFunction& fn,
                                                std::optional<int32_t> pclntabArgs) {
  return layoutFunction(fn, lookupIn(dwarf), pclntabArgs);
}

Result<std::vector<ValueLayout>> layoutFunction(const DwarfFunction& fn, const TypeLookup& types,
                                                std::optional<int32_t> pclntabArgs) {
  std::vector<ParamSpec> params;
  std::vector<ShapePtr> shapes;
  std::vector<std::string> problems;
  ShapeBuilder builder(types);
  auto add = [&](std::string name, std::string type, bool isResult) {
    auto s = builder.build(type);
    shapes.push_back(s ? *s : nullptr);
    problems.push_back(s ? std::string() : s.error().message);
    params.push_back({std::move(name), std::move(type), isResult});
  };
  // A shape instantiation's dictionary comes first, in RAX. -N -l builds list
  // it as `.dict uintptr`; optimized builds do not describe it: put it back.
  bool dictListed = !fn.params.empty() && fn.params.front().name == ".dict";
  if (dictListed || takesDictionary(fn.name)) add(".dict", "uintptr", false);
  size_t firstArg = dictListed ? 1 : 0;
  // A receiver that the source leaves unnamed (`func (T) M()`), or that of an
  // autogenerated wrapper (promoted methods, `(*T).M` for a value method), is
  // not in Go 1.19's DWARF but still takes its registers: put it back as `_`.
  if (auto recv = receiverType(types, fn.name)) {
    bool listed = firstArg < fn.params.size() && !fn.params[firstArg].isResult && fn.params[firstArg].type == *recv;
    if (!listed) add("_", *recv, false);
  }
  // DWARF lists receiver and arguments first and results last; keep that order
  // even if a producer interleaves them.
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = firstArg; i < fn.params.size(); i++)
      if (fn.params[i].isResult == (pass == 1)) add(fn.params[i].name, fn.params[i].type, fn.params[i].isResult);

  auto layout = assignLayout(params, shapes, problems);
  if (fn.lowPc && looksAbi0(fn, layout)) layout = assignLayout(params, shapes, problems, /*abi0=*/true);

  // Parameters named `_` or left unnamed are missing from DWARF: the frame
  // pclntab records is then bigger than the one DWARF's parameters make, and
  // every argument after the missing one is misplaced. Which one is missing
  // cannot be told, so no argument is placed; results in registers do not
  // depend on the arguments and stay.
  auto frame = argumentFrameSize(layout);
  if (pclntabArgs && *pclntabArgs >= 0 && frame && *frame != static_cast<uint64_t>(*pclntabArgs)) {
    std::string why = "DWARF omits a parameter (named `_` or unnamed): pclntab's argument frame is " +
                      std::to_string(*pclntabArgs) + " bytes, DWARF's parameters make " + std::to_string(*frame);
    bool anyArg = false;
    for (auto& v : layout) {
      if (v.isResult && !v.onStack) continue;
      anyArg |= !v.isResult;
      v.problem = why;
      v.parts.clear();
    }
    if (!anyArg) {
      ValueLayout unknown;
      unknown.name = "...";
      unknown.problem = why;
      layout.insert(layout.begin(), std::move(unknown));
    }
  }
  return layout;
}

Result<std::vector<ValueLayout>> layoutFromSignature(std::string_view sig, NamedTypeKinds named, TypeLookup runtimeTypes) {
  auto parsed = parseUserSignature(sig);
  if (!parsed) return parsed.failure();
  ShapeBuilder builder(std::move(runtimeTypes), std::move(named));
  if (takesDictionary(parsed->funcName)) parsed->params.insert(parsed->params.begin(), {".dict", "uintptr", false});
  std::vector<ShapePtr> shapes;
  for (const auto& p : parsed->params) {
    auto s = builder.build(p.type);
    if (!s)
      return fail(ErrorKind::Usage, "signature `" + std::string(sig) + "`: " + p.name + ": " + s.error().message,
                  s.error().hint);
    shapes.push_back(*s);
  }
  return assignLayout(parsed->params, shapes, {});
}

}  // namespace goscope
