#include <dwarf.h>
#include <doctest/doctest.h>

#include "binary/dwarf_location.hpp"

using namespace goscope;
using K = LocationPiece::Kind;

TEST_CASE("x86RegisterName follows the psABI DWARF numbering") {
  CHECK(x86RegisterName(0) == "rax");
  CHECK(x86RegisterName(1) == "rdx");
  CHECK(x86RegisterName(2) == "rcx");
  CHECK(x86RegisterName(3) == "rbx");
  CHECK(x86RegisterName(4) == "rsi");
  CHECK(x86RegisterName(5) == "rdi");
  CHECK(x86RegisterName(8) == "r8");
  CHECK(x86RegisterName(14) == "r14");
  CHECK(x86RegisterName(17) == "xmm0");
  CHECK(x86RegisterName(32) == "xmm15");
  CHECK(x86RegisterName(33).empty());
  CHECK(x86RegisterName(-1).empty());
}

TEST_CASE("decodeLocation: one register holds the whole value") {
  std::vector<DwarfOp> ops = {{DW_OP_reg0}};
  auto p = decodeLocation(ops);
  REQUIRE(p.size() == 1);
  CHECK(p[0].kind == K::Register);
  CHECK(p[0].dwarfReg == 0);
  CHECK(p[0].regName() == "rax");
  CHECK(p[0].size == 0);
}

TEST_CASE("decodeLocation: a string in two register pieces") {
  std::vector<DwarfOp> ops = {{DW_OP_reg0}, {DW_OP_piece, 8}, {DW_OP_reg3}, {DW_OP_piece, 8}};
  auto p = decodeLocation(ops);
  REQUIRE(p.size() == 2);
  CHECK(p[0].regName() == "rax");
  CHECK(p[0].size == 8);
  CHECK(p[1].regName() == "rbx");
  CHECK(p[1].size == 8);
  CHECK(describe(p) == "rax:8 | rbx:8");
}

TEST_CASE("decodeLocation: an empty piece is a hole") {
  std::vector<DwarfOp> ops = {{DW_OP_piece, 8}, {DW_OP_reg2}, {DW_OP_piece, 8}};
  auto p = decodeLocation(ops);
  REQUIRE(p.size() == 2);
  CHECK(p[0].kind == K::Absent);
  CHECK(p[0].size == 8);
  CHECK(p[1].regName() == "rcx");
}

TEST_CASE("decodeLocation: stack slots are CFA offsets") {
  std::vector<DwarfOp> cfa = {{DW_OP_call_frame_cfa}};
  auto p = decodeLocation(cfa);
  REQUIRE(p.size() == 1);
  CHECK(p[0].kind == K::Stack);
  CHECK(p[0].cfaOffset == 0);
  CHECK(describe(p) == "cfa");

  std::vector<DwarfOp> fb = {{DW_OP_fbreg, static_cast<uint64_t>(int64_t{-24})}};
  p = decodeLocation(fb);
  REQUIRE(p.size() == 1);
  CHECK(p[0].kind == K::Stack);
  CHECK(p[0].cfaOffset == -24);
  CHECK(describe(p) == "cfa-24");

  // fbreg relative to something other than the CFA is not modelled.
  p = decodeLocation(fb, /*frameBaseIsCfa=*/false);
  REQUIRE(p.size() == 1);
  CHECK(p[0].kind == K::Unsupported);

  std::vector<DwarfOp> plus = {{DW_OP_call_frame_cfa}, {DW_OP_plus_uconst, 16}};
  p = decodeLocation(plus);
  REQUIRE(p.size() == 1);
  CHECK(p[0].cfaOffset == 16);
}

TEST_CASE("decodeLocation: static address and unsupported expressions") {
  std::vector<DwarfOp> addr = {{DW_OP_addr, 0x558060}};
  auto p = decodeLocation(addr);
  REQUIRE(p.size() == 1);
  CHECK(p[0].kind == K::Address);
  CHECK(p[0].address == 0x558060);

  std::vector<DwarfOp> weird = {{DW_OP_breg7, 8}, {DW_OP_deref}, {DW_OP_piece, 8}, {DW_OP_reg3}, {DW_OP_piece, 8}};
  p = decodeLocation(weird);
  REQUIRE(p.size() == 2);
  CHECK(p[0].kind == K::Unsupported);
  CHECK(p[0].size == 8);
  CHECK(p[1].regName() == "rbx");

  CHECK(decodeLocation(std::vector<DwarfOp>{}).empty());
}

TEST_CASE("parseExpression reads the operands Go uses") {
  // DW_OP_addr 0x558060 (Go's block1 location of a package variable)
  std::vector<uint8_t> addr = {0x03, 0x60, 0x80, 0x55, 0, 0, 0, 0, 0};
  auto ops = parseExpression(addr);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].atom == DW_OP_addr);
  CHECK(ops[0].number == 0x558060);

  // DW_OP_fbreg -24; DW_OP_piece 8; DW_OP_reg3; DW_OP_piece 8; DW_OP_regx 17
  std::vector<uint8_t> mix = {0x91, 0x68, 0x93, 0x08, 0x53, 0x93, 0x08, 0x90, 0x11};
  ops = parseExpression(mix);
  REQUIRE(ops.size() == 5);
  CHECK(static_cast<int64_t>(ops[0].number) == -24);
  CHECK(ops[1].number == 8);
  CHECK(ops[2].atom == DW_OP_reg3);
  CHECK(ops[4].atom == DW_OP_regx);
  CHECK(ops[4].number == 17);
  auto pieces = decodeLocation(ops);
  REQUIRE(pieces.size() == 3);
  CHECK(describe(pieces) == "cfa-24:8 | rbx:8 | xmm0");

  // A truncated operand does not read past the end.
  std::vector<uint8_t> cut = {0x03, 0x60, 0x80};
  ops = parseExpression(cut);
  REQUIRE(ops.size() == 1);
  CHECK(decodeLocation(ops)[0].kind == K::Unsupported);

  // An operation with unknown operands stops the parse.
  std::vector<uint8_t> unknown = {0x53, 0xe0, 0x01, 0x02};
  ops = parseExpression(unknown);
  REQUIRE(ops.size() == 2);
  CHECK(ops[1].atom == 0xe0);
}

TEST_CASE("LocationRange::contains is half-open") {
  LocationRange r{0x100, 0x110, {}};
  CHECK(r.contains(0x100));
  CHECK(r.contains(0x10f));
  CHECK_FALSE(r.contains(0x110));
  CHECK(LocationRange{}.contains(0xffffffff));
}

TEST_CASE("coversExactly checks piece sizes against the type size") {
  std::vector<DwarfOp> whole = {{DW_OP_reg0}};
  CHECK(coversExactly(decodeLocation(whole), 8));
  std::vector<DwarfOp> str = {{DW_OP_reg0}, {DW_OP_piece, 8}, {DW_OP_reg3}, {DW_OP_piece, 8}};
  CHECK(coversExactly(decodeLocation(str), 16));
  CHECK_FALSE(coversExactly(decodeLocation(str), 24));
  // Go 1.19's location for a []T parameter of main.Map in the zoo fixture.
  std::vector<DwarfOp> quirk = {{DW_OP_reg3}, {DW_OP_piece, 8}, {DW_OP_reg3}, {DW_OP_piece, 8},
                                {DW_OP_reg2}, {DW_OP_piece, 8}, {DW_OP_reg5}, {DW_OP_piece, 8}};
  CHECK_FALSE(coversExactly(decodeLocation(quirk), 24));
  CHECK_FALSE(coversExactly({}, 8));
}
