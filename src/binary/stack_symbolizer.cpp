#include "binary/stack_symbolizer.hpp"

#include "util/hex.hpp"

namespace goscope {

std::vector<StackFrame> symbolizeStack(const Pclntab& pcln, std::span<const uint64_t> pcs, uint64_t bias) {
  std::vector<StackFrame> out;
  for (size_t i = 0; i < pcs.size(); i++) {
    uint64_t pc = pcs[i];
    uint64_t link = pc - bias;
    auto frames = pcln.symbolize(i == 0 ? link : link - 1);
    if (frames.empty()) {
      out.push_back({pc, {}, false});
      continue;
    }
    for (auto& f : frames) out.push_back({pc, std::move(f), true});
  }
  return out;
}

std::string foldedLine(const std::vector<StackFrame>& frames) {
  std::string s;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!s.empty()) s += ';';
    s += it->known ? it->source.function : hex(it->pc);
  }
  return s;
}

const std::string& FoldedNamer::namesAt(uint64_t pc, bool first) {
  auto [it, fresh] = names_[first].try_emplace(pc);
  if (!fresh) return it->second;
  const uint64_t link = pc - bias_;
  auto frames = pcln_.symbolize(first ? link : link - 1);
  if (frames.empty()) {
    it->second = hex(pc);
    return it->second;
  }
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
    if (!it->second.empty()) it->second += ';';
    it->second += f->function;
  }
  return it->second;
}

std::string FoldedNamer::line(std::span<const uint64_t> pcs) {
  std::string s;
  for (size_t i = pcs.size(); i-- > 0;) {
    if (!s.empty()) s += ';';
    s += namesAt(pcs[i], i == 0);
  }
  return s;
}

std::string frameText(const StackFrame& f) {
  if (!f.known) return hex(f.pc);
  std::string s = f.source.function + " " + f.source.file + ":" + std::to_string(f.source.line);
  if (f.source.inlined) s += " (inlined)";
  return s;
}

}  // namespace goscope
