#include "target/inline_placement.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "target/x86_insn.hpp"
#include "util/hex.hpp"

namespace goscope {

namespace {

// One instruction of the caller as a node of its control-flow graph. Calls
// fall through (a call that never returns only adds an edge: the checks
// below can then only refuse more, never accept wrongly).
struct Node {
  uint64_t addr = 0;
  uint32_t len = 0;
  bool fallsThrough = true;
  bool indirectJump = false;  // jmp *reg / *mem: its targets are unknown (a jump table)
  bool isNop = false;         // 90 or 0f 1f: what an inline mark assembles to
  std::optional<uint64_t> target;
};

Node decodeNode(uint64_t addr, std::span<const uint8_t> bytes) {
  Node n;
  n.addr = addr;
  n.len = static_cast<uint32_t>(bytes.size());
  auto v = x86::parseInsn(bytes);
  if (!v || v->encoding != x86::Encoding::Legacy) return n;
  auto rel8 = [&] { return addr + n.len + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(bytes.back()))); };
  auto rel32 = [&] {
    int32_t d = 0;
    if (bytes.size() >= 4) std::memcpy(&d, bytes.data() + bytes.size() - 4, 4);
    return addr + n.len + static_cast<uint64_t>(static_cast<int64_t>(d));
  };
  const uint8_t op = v->opcode;
  if (v->map == x86::OpMap::Primary) {
    if (op == 0xeb) { n.target = rel8(); n.fallsThrough = false; }
    else if (op == 0xe9) { n.target = rel32(); n.fallsThrough = false; }
    else if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) n.target = rel8();
    else if (op == 0xc3 || op == 0xc2 || op == 0xcb || op == 0xca || op == 0xcc) n.fallsThrough = false;
    else if (op == 0xff) {
      auto m = v->modrm();
      if (m && (m->reg & 7) >= 4 && (m->reg & 7) <= 5) { n.indirectJump = true; n.fallsThrough = false; }
    } else if (op == 0x90 && !v->rexB()) n.isNop = true;
  } else if (v->map == x86::OpMap::Map0F) {
    if (op >= 0x80 && op <= 0x8f) n.target = rel32();
    else if (op == 0x0b) n.fallsThrough = false;  // ud2
    else if (op == 0x1f) n.isNop = true;
  }
  return n;
}

struct CodeGraph {
  std::vector<Node> nodes;
  std::vector<std::vector<size_t>> succ;
  std::vector<uint32_t> preds;  // number of predecessors of each node
  bool indirect = false;
  size_t indexOf(uint64_t addr) const {  // nodes.size() when addr starts no instruction
    auto it = std::lower_bound(nodes.begin(), nodes.end(), addr, [](const Node& n, uint64_t a) { return n.addr < a; });
    return it != nodes.end() && it->addr == addr ? static_cast<size_t>(it - nodes.begin()) : nodes.size();
  }
};

CodeGraph buildGraph(const FunctionCode& code, std::span<const uint8_t> bytes) {
  CodeGraph g;
  std::vector<uint64_t> starts;
  for (uint64_t a = code.entry; a < code.bodyEnd; a++)
    if (isInstructionBoundary(code, a)) starts.push_back(a);
  for (size_t i = 0; i < starts.size(); i++) {
    uint64_t end = i + 1 < starts.size() ? starts[i + 1] : code.bodyEnd;
    uint64_t off = starts[i] - code.entry;
    if (end - code.entry > bytes.size()) break;
    g.nodes.push_back(decodeNode(starts[i], bytes.subspan(off, end - starts[i])));
    g.indirect = g.indirect || g.nodes.back().indirectJump;
  }
  g.succ.resize(g.nodes.size());
  g.preds.assign(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (g.nodes[i].fallsThrough && i + 1 < g.nodes.size()) g.succ[i].push_back(i + 1);
    if (g.nodes[i].target) {
      size_t t = g.indexOf(*g.nodes[i].target);
      if (t < g.nodes.size()) g.succ[i].push_back(t);
    }
    for (size_t s : g.succ[i]) g.preds[s]++;
  }
  return g;
}

bool inRanges(const std::vector<std::pair<uint64_t, uint64_t>>& r, uint64_t a) {
  for (const auto& [s, e] : r)
    if (a >= s && a < e) return true;
  return false;
}

// Whether `to` can be reached from `from`'s successors, moving only through
// nodes `allowed` accepts (never through `avoid`).
template <class Allowed>
bool reaches(const CodeGraph& g, std::vector<size_t> start, size_t to, size_t avoid, Allowed allowed) {
  std::vector<bool> seen(g.nodes.size(), false);
  while (!start.empty()) {
    size_t n = start.back();
    start.pop_back();
    if (n == to) return true;
    if (n == avoid || seen[n] || !allowed(n)) continue;
    seen[n] = true;
    for (size_t s : g.succ[n]) start.push_back(s);
  }
  return false;
}

void placeOnGraph(const CodeGraph& g, const FunctionCode& code, const std::vector<std::pair<uint64_t, uint64_t>>& body,
                  uint64_t parentPc, InlinedSite& site) {
  if (code.undecodable) {
    site.reason = "left out: the caller does not decode to its end (" + std::string(code.undecodableWhy) + ")";
    return;
  }
  if (g.indirect) {
    site.reason = "left out: the caller has an indirect jump (a jump table), so where the body is entered cannot be proven";
    return;
  }
  std::vector<size_t> inBody;
  for (size_t i = 0; i < g.nodes.size(); i++)
    if (inRanges(body, g.nodes[i].addr)) inBody.push_back(i);
  if (inBody.empty()) {
    // Nothing of the body is left; a real inline mark (a nop the compiler
    // emitted at the call because no other instruction has its position)
    // runs once per call, any other instruction at parentPc may not.
    size_t m = g.indexOf(parentPc);
    if (m < g.nodes.size() && g.nodes[m].isNop && isSafeToProbe(code, parentPc)) {
      site.probes.push_back(parentPc);
      site.reason = "the call's inline mark (the compiler removed the body)";
    } else {
      site.reason = "left out: the compiler removed the body and left no inline mark at the call";
    }
    return;
  }
  // The body's first instruction in address order, E. Every call passes it
  // when nothing outside the body reaches a body instruction except through E
  // (E dominates the body) ...
  const size_t e = inBody.front();
  const uint64_t spanEnd = body.empty() ? 0 : std::max_element(body.begin(), body.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
  // One walk from the caller's entry that never passes E: a body
  // instruction it reaches is entered some other way.
  {
    std::vector<bool> seen(g.nodes.size(), false);
    std::vector<size_t> todo{0};
    while (!todo.empty()) {
      size_t n = todo.back();
      todo.pop_back();
      if (n == e || seen[n]) continue;
      seen[n] = true;
      for (size_t s : g.succ[n]) todo.push_back(s);
    }
    for (size_t b : inBody)
      if (b != e && seen[b]) {
        site.reason = "left out: the body is entered at " + hex(g.nodes[b].addr) + ", not only at its first instruction " +
                      hex(g.nodes[e].addr);
        return;
      }
  }
  if (e == 0) {  // cannot happen in Go (the caller's own prologue comes first); refuse rather than guess
    site.reason = "left out: the body starts at the caller's entry";
    return;
  }
  // ... and passes it once: no path from E back to E stays inside the span
  // of the body (a loop of the inlined function whose head is E would).
  if (reaches(g, g.succ[e], e, g.nodes.size(), [&](size_t n) { return g.nodes[n].addr >= g.nodes[e].addr && g.nodes[n].addr < spanEnd; })) {
    site.reason = "left out: a loop inside the body comes back to its first instruction " + hex(g.nodes[e].addr);
    return;
  }
  // An unsafe first instruction: the next one runs exactly when it does if
  // it is straight-line code that nothing else jumps to.
  size_t p = e;
  std::string skipped;
  while (true) {
    Hazard h = hazardAt(code, g.nodes[p].addr);
    if (h == Hazard::None) break;
    if (skipped.empty()) skipped = std::string(describe(h));
    size_t next = p + 1;
    if (!g.nodes[p].fallsThrough || g.nodes[p].target || next >= g.nodes.size() || g.preds[next] != 1 ||
        g.nodes[next].addr >= spanEnd) {
      site.reason = "left out: the body's first instruction " + hex(g.nodes[e].addr) + " is unsafe to probe (" + skipped +
                    ") and no later instruction runs exactly once per call";
      return;
    }
    p = next;
  }
  site.probes.push_back(g.nodes[p].addr);
  site.reason = p == e ? "the body's first instruction, passed once per call"
                       : "the instruction after the body's first (" + hex(g.nodes[e].addr) + " is unsafe to probe: " + skipped + ")";
}

}  // namespace

struct InlinePlacer::Graph {
  CodeGraph g;
};

InlinePlacer::InlinePlacer(const FunctionCode& code, std::span<const uint8_t> bytes)
    : code_(code), graph_(std::make_unique<Graph>(Graph{buildGraph(code, bytes)})) {}
InlinePlacer::~InlinePlacer() = default;

void InlinePlacer::place(const std::vector<std::pair<uint64_t, uint64_t>>& body, uint64_t parentPc, InlinedSite& site) const {
  placeOnGraph(graph_->g, code_, body, parentPc, site);
}

void placeInlinedProbe(const FunctionCode& code, std::span<const uint8_t> bytes,
                       const std::vector<std::pair<uint64_t, uint64_t>>& body, uint64_t parentPc, InlinedSite& site) {
  InlinePlacer(code, bytes).place(body, parentPc, site);
}

}  // namespace goscope
