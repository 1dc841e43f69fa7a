// The ABI layout computed from types against DWARF's entry locations, for
// every main.* function of the zoo fixture (default, pie, nopt builds): where
// DWARF's pieces cover a parameter's type exactly, both must name the same
// registers (or the same stack slot). Where they do not (Go 1.19 writes such
// lists for 2-4% of parameters), the count is reported, not judged.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "probe/abi_layout.hpp"
#include "support/run.hpp"
#include "binary/elf_file.hpp"
#include "binary/pclntab.hpp"

using namespace goscope;

namespace {

// x86-64 psABI DWARF register number -> our part (IntReg index or FloatReg N).
std::optional<std::pair<ValuePart::Kind, unsigned>> fromDwarfReg(int r) {
  static const int ints[kGoIntRegs] = {0 /*rax*/, 3 /*rbx*/, 2 /*rcx*/, 5 /*rdi*/, 4 /*rsi*/, 8, 9, 10, 11};
  for (unsigned i = 0; i < kGoIntRegs; i++)
    if (ints[i] == r) return std::make_pair(ValuePart::IntReg, i);
  if (r >= 17 && r <= 32) return std::make_pair(ValuePart::FloatReg, static_cast<unsigned>(r - 17));
  return std::nullopt;
}

// Empty when the layout says what the pieces say; else what differs. An
// absent piece (padding, or a part DWARF calls optimized out) matches anything.
std::string compare(const ValueLayout& v, const std::vector<LocationPiece>& pieces) {
  std::ostringstream why;
  why << "DWARF " << describe(pieces) << ", ABI " << describeLayout(v);
  if (v.shape->size == 0) return v.onStack ? "" : why.str();  // no bytes: only its (empty) stack slot
  uint64_t mem = 0;
  for (const auto& p : pieces) {
    uint64_t size = p.size ? p.size : v.shape->size;
    switch (p.kind) {
      case LocationPiece::Kind::Absent: break;
      case LocationPiece::Kind::Register: {
        auto reg = fromDwarfReg(p.dwarfReg);
        auto it = std::find_if(v.parts.begin(), v.parts.end(), [&](const ValuePart& q) { return q.memOffset == mem; });
        if (v.onStack || !reg || it == v.parts.end() || it->kind != reg->first || it->reg != reg->second ||
            it->size != size)
          return why.str();
        break;
      }
      case LocationPiece::Kind::Stack:
        // At the entry the CFA is RSP+8: DWARF's CFA offset N is our RSP+8+N.
        if (!v.onStack || v.parts.empty() || v.parts[0].stackOffset + static_cast<int64_t>(mem) != p.cfaOffset + 8)
          return why.str();
        break;
      default: return why.str();
    }
    mem += size;
  }
  return {};
}

// The DWARF parameter a layout value stands for (nullptr for a receiver
// that layoutFunction put back).
const DwarfParam* dwarfParam(const DwarfFunction& fn, const ValueLayout& v) {
  for (const auto& p : fn.params)
    if (p.name == v.name && p.isResult == v.isResult) return &p;
  return nullptr;
}

}  // namespace

TEST_CASE("abi layout: zoo's main.* functions agree with DWARF entry locations") {
  for (std::string variant : {"default", "pie", "nopt"}) {
    CAPTURE(variant);
    auto elf = ElfFile::open(test::fixture("zoo", variant));
    REQUIRE(elf);
    auto dwarf = DwarfInfo::read(**elf);
    REQUIRE(dwarf);
    REQUIRE(dwarf->has_value());
    const DwarfInfo& d = **dwarf;
    auto pcln = Pclntab::read(**elf);
    REQUIRE(pcln);

    int functions = 0, compared = 0, agreed = 0, notCovering = 0, noLocation = 0, unknown = 0;
    for (const auto& fn : d.functions()) {
      if (!fn.name.starts_with("main.") || fn.inlinedOnly || fn.lowPc == 0) continue;
      functions++;
      const GoFunction* gf = pcln->functionAt(fn.lowPc);
      REQUIRE(gf);
      // With the frame check: zoo has no `_` parameters, so none may be reported.
      auto layout = layoutFunction(d, fn, gf->args);
      REQUIRE(layout);
      auto frame = argumentFrameSize(*layout);
      CHECK_MESSAGE((frame && *frame == static_cast<uint64_t>(gf->args)), fn.name << ": pclntab args " << gf->args);
      for (const ValueLayout& v : *layout) {
        {
          if (!v.problem.empty()) {
            unknown++;
            MESSAGE(variant << " " << fn.name << ": " << describeLayout(v));
            continue;
          }
          const DwarfParam* dp = dwarfParam(fn, v);
          if (v.isResult || !dp) continue;  // DWARF has no entry location for results
          const DwarfParam& p = *dp;
          const LocationRange* loc = locationAtEntry(p, fn.lowPc);
          if (!loc || loc->pieces.empty()) {
            noLocation++;
            continue;
          }
          if (!coversExactly(loc->pieces, v.shape->size)) {
            notCovering++;
            std::string diff = compare(v, loc->pieces);
            MESSAGE(variant << " " << fn.name << " " << p.name << ": DWARF pieces do not cover " << v.shape->size
                            << " bytes: " << describe(loc->pieces) << "; ABI: " << describeLayout(v));
            continue;
          }
          compared++;
          std::string diff = compare(v, loc->pieces);
          CHECK_MESSAGE(diff.empty(), variant << " " << fn.name << " " << p.name << ": " << diff);
          if (diff.empty()) agreed++;
        }
      }
    }
    MESSAGE(variant << ": " << functions << " main.* functions; " << compared << " parameters compared, " << agreed
                    << " agree; " << notCovering << " with DWARF pieces that do not cover the type; " << noLocation
                    << " without an entry location; " << unknown << " of unknown type");
    CHECK(functions > 30);
    CHECK(compared > 40);
    CHECK(unknown == 0);
  }
}

// Every function of the binary, the standard library's included: thousands of
// signatures with padding, floats, complex numbers, arrays and big structs.
// Disagreements are expected where DWARF omits a parameter named `_` or left
// unnamed (every later register shifts) and where DWARF is wrong (Go 1.19:
// runtime.(*pallocData).findScavengeCandidate's `max` is said to be in RCX;
// the code tests RDI, as the ABI says); they are listed, and must stay rare.
TEST_CASE("abi layout: every function of zoo agrees with DWARF entry locations") {
  for (std::string variant : {"default", "nopt"}) {
  CAPTURE(variant);
  auto elf = ElfFile::open(test::fixture("zoo", variant));
  REQUIRE(elf);
  auto dwarf = DwarfInfo::read(**elf);
  REQUIRE(dwarf);
  REQUIRE(dwarf->has_value());
  const DwarfInfo& d = **dwarf;
  auto pcln = Pclntab::read(**elf);
  REQUIRE(pcln);
  int compared = 0, agreed = 0, unknown = 0, shown = 0, frames = 0, framesAgree = 0;
  for (const auto& fn : d.functions()) {
    if (fn.inlinedOnly || fn.lowPc == 0) continue;
    auto layout = layoutFunction(d, fn);  // without the frame check: compare everything
    REQUIRE(layout);
    if (const GoFunction* gf = pcln->functionAt(fn.lowPc); gf && gf->entry == fn.lowPc) {
      frames++;
      auto frame = argumentFrameSize(*layout);
      if (frame && *frame == static_cast<uint64_t>(gf->args)) framesAgree++;
      else if (shown++ < 40) {
        std::string all;
        for (const auto& v : *layout) all += "; " + describeLayout(v);
        MESSAGE(fn.name << ": pclntab args " << gf->args << ", ABI frame " << (frame ? std::to_string(*frame) : "?") << all);
      }
    }
    for (const ValueLayout& v : *layout) {
      {
        if (!v.problem.empty()) {
          unknown++;
          continue;
        }
        const DwarfParam* dp = dwarfParam(fn, v);
        if (v.isResult || !dp) continue;
        const LocationRange* loc = locationAtEntry(*dp, fn.lowPc);
        if (!loc || loc->pieces.empty() || !coversExactly(loc->pieces, v.shape->size)) continue;
        compared++;
        std::string diff = compare(v, loc->pieces);
        if (diff.empty()) agreed++;
        else if (shown++ < 40) MESSAGE(fn.name << " " << v.name << ": " << diff);
      }
    }
  }
  MESSAGE("zoo (" << variant << "), all functions: " << compared << " parameters compared, " << agreed
                  << " agree, " << compared - agreed << " disagree; " << unknown << " of unknown type");
  MESSAGE("argument frame sizes: " << framesAgree << " of " << frames << " agree with pclntab");
  CHECK(compared > 2000);
  CHECK(compared - agreed <= compared / 200);
  CHECK(unknown == 0);
  }
}

// Results passed on the stack: where DWARF gives them a stack slot anywhere
// in the function (the caller's frame: the same address for the whole call),
// it must be ours. Registers are not compared: results move through them.
TEST_CASE("abi layout: stack-assigned results agree with DWARF's stack slots") {
  int compared = 0, agreed = 0;
  for (std::string variant : {"default", "nopt"}) {
    auto elf = ElfFile::open(test::fixture("zoo", variant));
    REQUIRE(elf);
    auto dwarf = DwarfInfo::read(**elf);
    REQUIRE(dwarf);
    REQUIRE(dwarf->has_value());
    const DwarfInfo& d = **dwarf;
    for (const auto& fn : d.functions()) {
      if (fn.inlinedOnly || fn.lowPc == 0) continue;
      auto layout = layoutFunction(d, fn);
      REQUIRE(layout);
      for (const ValueLayout& v : *layout) {
        if (!v.isResult || !v.onStack || v.parts.empty()) continue;
        const DwarfParam* dp = dwarfParam(fn, v);
        if (!dp) continue;
        for (const auto& range : dp->locations) {
          if (range.pieces.size() != 1 || range.pieces[0].kind != LocationPiece::Kind::Stack) continue;
          compared++;
          if (range.pieces[0].cfaOffset + 8 == v.parts[0].stackOffset) agreed++;
          else MESSAGE(variant << " " << fn.name << " " << v.name << ": DWARF cfa+" << range.pieces[0].cfaOffset
                               << ", ABI " << describeLayout(v));
          break;
        }
      }
    }
  }
  MESSAGE(compared << " stack-assigned results with a DWARF stack slot, " << agreed << " agree");
  CHECK(compared > 0);
  CHECK(agreed == compared);
}

TEST_CASE("abi layout: known zoo signatures") {
  auto elf = ElfFile::open(test::fixture("zoo"));
  REQUIRE(elf);
  auto dwarf = DwarfInfo::read(**elf);
  REQUIRE(dwarf);
  REQUIRE(dwarf->has_value());
  const DwarfInfo& d = **dwarf;
  auto layoutOf = [&](const char* name) {
    const DwarfFunction* fn = d.function(name);
    REQUIRE_MESSAGE(fn, name);
    auto l = layoutFunction(d, *fn);
    REQUIRE(l);
    std::string s;
    for (const auto& v : *l) s += (s.empty() ? "" : "; ") + describeLayout(v);
    return s;
  };
  CHECK(layoutOf("main.checkRecord") ==
        "r main.Record: RAX(.X) RBX(.Y) RCX(.Name.ptr) RDI(.Name.len); ~r0 int64: RAX");
  CHECK(layoutOf("main.scale") == "v float64: X0; k int: RAX; ~r0 float64: X0");
  CHECK(layoutOf("main.shapeArea") == "s main.Shape: RAX(.itab) RBX(.data); ~r0 float64: X0");
  CHECK(layoutOf("main.deepRecurse") == "depth int: RAX; pad [64]uint8: RSP+8; ~r0 int: RAX");
  CHECK(layoutOf("main.(*Server).Handle") ==
        "s *main.Server: RAX; req main.Request: RBX(.Path.ptr) RCX(.Path.len) RDI(.ID); "
        "~r0 main.Response: RAX(.Status) RBX(.Body.ptr) RCX(.Body.len); ~r1 error: RDI(.itab) RSI(.data)");
  // The dictionary takes RAX: xs starts in RBX.
  CHECK(layoutOf("main.Map[go.shape.int_0,go.shape.string_1]") ==
        ".dict uintptr: RAX; xs []go.shape.int_0: RBX(.ptr) RCX(.len) RDI(.cap); f func(go.shape.int_0) go.shape.string_1: RSI; "
        "~r0 []go.shape.string_1: RAX(.ptr) RBX(.len) RCX(.cap)");
}
