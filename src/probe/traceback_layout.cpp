#include "probe/traceback_layout.hpp"

#include <algorithm>
#include <limits>

namespace goscope {

namespace {

void collectWords(const std::vector<ArgInfoItem>& items, std::vector<const ArgInfoItem*>& out) {
  for (const auto& i : items) {
    if (i.kind == ArgInfoItem::Kind::Word) out.push_back(&i);
    else if (i.kind == ArgInfoItem::Kind::Group) collectWords(i.items, out);
  }
}

}  // namespace

TracebackLayout placeWords(std::vector<ArgInfoItem> args, const ArgPlaces& places) {
  TracebackLayout t;
  t.args = std::move(args);
  std::vector<const ArgInfoItem*> words;
  collectWords(t.args, words);
  // A word's own size, so that a stack word reads only its bytes; printed
  // as a uintptr whatever its size (groupWords), as the traceback prints it.
  static const ShapePtr sized[] = {ShapeBuilder().build("uint8").value(), ShapeBuilder().build("uint16").value(),
                                   ShapeBuilder().build("uint32").value(), ShapeBuilder().build("uintptr").value()};
  auto shapeOf = [](uint8_t size) { return size == 1 ? sized[0] : size == 2 ? sized[1] : size <= 4 ? sized[2] : sized[3]; };
  uint32_t firstSpill = std::numeric_limits<uint32_t>::max();
  for (const auto& s : places.spills) firstSpill = std::min(firstSpill, s.offset);
  switch (places.from) {
    case ArgPlaces::From::Spills: t.placesFrom = "the registers its stack-growth path saves"; break;
    case ArgPlaces::From::IntegerOrder:
      t.placesFrom = "integer registers in order (it never grows its stack, uses no float register, and touches its argument frame only to save a word's own register)";
      break;
    case ArgPlaces::From::Unknown: t.placesFrom = "unknown: " + places.why; break;
  }
  for (size_t i = 0; i < words.size(); i++) {
    const ArgInfoItem& w = *words[i];
    ValueLayout v;
    v.name = "w" + std::to_string(i);
    v.shape = shapeOf(w.size);
    v.type = v.shape->name;
    ValuePart p;
    p.size = w.size;
    p.scalarKind = v.shape->kind;
    if (places.from == ArgPlaces::From::IntegerOrder) {
      p.kind = ValuePart::IntReg;
      p.reg = static_cast<unsigned>(i);
    } else if (places.from == ArgPlaces::From::Spills) {
      auto s = std::find_if(places.spills.begin(), places.spills.end(), [&](const ArgSpill& s) { return s.offset == w.offset; });
      if (s != places.spills.end()) {
        p.kind = s->isFloat ? ValuePart::FloatReg : ValuePart::IntReg;
        p.reg = s->reg;
        p.size = std::min<uint32_t>(w.size, s->size);
      } else if (w.offset < firstSpill) {
        // Below the spill area: the stack-assigned arguments (abi-internal.md).
        p.kind = ValuePart::Stack;
        p.stackOffset = 8 + w.offset;
        v.onStack = true;
      } else {
        v.problem = "its offset is not among the registers the function saves";
      }
    } else {
      v.problem = places.why;
    }
    if (v.problem.empty()) v.parts.push_back(p);
    else v.shape = nullptr;
    t.words.push_back(std::move(v));
  }
  return t;
}

}  // namespace goscope
