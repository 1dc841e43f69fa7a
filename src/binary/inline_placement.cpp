#include "binary/inline_placement.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>

#include "binary/x86_insn.hpp"
#include "util/hex.hpp"

namespace goscope {

namespace {

// One instruction of the caller as a node of its control-flow graph. Calls
// fall through (a call that never returns only adds an edge: the checks
// below can then only refuse more, never accept wrongly).
// 24 bytes (a graph has a node per instruction of every caller of an
// inlined body: start-up builds millions of them for a big binary).
struct Node {
  uint64_t addr = 0;
  uint64_t targetAddr = 0;    // with hasTarget: a direct branch's target
  uint32_t len = 0;
  bool fallsThrough = true;
  bool indirectJump = false;  // jmp *reg / *mem: its targets are unknown (a jump table)
  bool isNop = false;         // 90 or 0f 1f: what an inline mark assembles to
  bool hasTarget = false;
  void setTarget(uint64_t a) { targetAddr = a, hasTarget = true; }
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
    if (op == 0xeb) { n.setTarget(rel8()); n.fallsThrough = false; }
    else if (op == 0xe9) { n.setTarget(rel32()); n.fallsThrough = false; }
    else if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) n.setTarget(rel8());
    else if (op == 0xc3 || op == 0xc2 || op == 0xcb || op == 0xca || op == 0xcc) n.fallsThrough = false;
    else if (op == 0xff) {
      auto m = v->modrm();
      if (m && (m->reg & 7) >= 4 && (m->reg & 7) <= 5) { n.indirectJump = true; n.fallsThrough = false; }
    } else if (op == 0x90 && !v->rexB()) n.isNop = true;
  } else if (v->map == x86::OpMap::Map0F) {
    if (op >= 0x80 && op <= 0x8f) n.setTarget(rel32());
    else if (op == 0x0b) n.fallsThrough = false;  // ud2
    else if (op == 0x1f) n.isNop = true;
  }
  return n;
}

struct CodeGraph {
  std::vector<Node> nodes;
  // At most two successors an instruction (its fall-through and its
  // branch target): fixed slots, not a vector each (start-up builds the
  // graph of every caller of an inlined body, tens of thousands of nodes).
  struct Successors {
    std::array<uint32_t, 2> to{};
    uint8_t count = 0;
    const uint32_t* begin() const { return to.data(); }
    const uint32_t* end() const { return to.data() + count; }
    size_t size() const { return count; }
    uint32_t operator[](size_t i) const { return to[i]; }
    void push_back(size_t v) { to[count++] = static_cast<uint32_t>(v); }
  };
  std::vector<Successors> succ;
  std::vector<uint32_t> preds;  // number of predecessors of each node
  bool indirect = false;
  // The basic block of each node: a run of nodes entered only at its first
  // and left only from its last (each of the others has its predecessor as
  // its one way in). Dominance is computed on the blocks (Go code has ~5
  // instructions a block: start-up's graphs are that much smaller), and
  // inside a block an earlier node dominates every later one.
  std::vector<uint32_t> blockOf;
  // The blocks' dominator tree from the caller's entry, as DFS intervals: a
  // reachable block A dominates B iff domIn[A] <= domIn[B] && domOut[B] <= domOut[A].
  // Unreachable blocks have domIn == 0 (every reachable one has >= 1).
  std::vector<uint32_t> domIn, domOut;
  bool dominates(size_t a, size_t b) const {
    const uint32_t A = blockOf[a], B = blockOf[b];
    if (domIn[B] == 0) return true;  // nothing reaches b from the entry: no way into the body there
    if (domIn[A] == 0) return false;
    if (A == B) return a <= b;
    return domIn[A] <= domIn[B] && domOut[B] <= domOut[A];
  }
  // The nodes are the instruction starts of the analysis's boundary bits, in
  // order: a node's index is the number of bits set before its own (a
  // count per 64-bit word, then one popcount), not a binary search per
  // branch target.
  uint64_t entry = 0, span = 0;
  const std::vector<uint64_t>* bits = nullptr;
  std::vector<uint32_t> setBefore;  // bits set in the words before each word
  size_t indexOf(uint64_t addr) const {  // nodes.size() when addr starts no instruction
    if (addr < entry || addr - entry >= span) return nodes.size();
    const uint64_t off = addr - entry;
    if (off / 64 >= bits->size()) return nodes.size();
    const uint64_t word = (*bits)[off / 64], bit = uint64_t{1} << (off % 64);
    if (!(word & bit)) return nodes.size();
    const size_t i = setBefore[off / 64] + static_cast<size_t>(std::popcount(word & (bit - 1)));
    return i < nodes.size() ? i : nodes.size();
  }
};

// Dominators of every node of a graph from node 0: the iterative algorithm
// of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm", 2001)
// on the reverse postorder, then the tree's DFS intervals for O(1) queries
// (docs/go-runtime.md, "Inlined calls").
void dominatorIntervals(const std::vector<CodeGraph::Successors>& succ, std::vector<uint32_t>& domIn,
                        std::vector<uint32_t>& domOut) {
  const size_t n = succ.size();
  domIn.assign(n, 0);
  domOut.assign(n, 0);
  if (n == 0) return;
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> post(n, kNone), order;  // postorder number, nodes in postorder
  order.reserve(n);
  {
    std::vector<std::pair<size_t, size_t>> stack{{0, 0}};  // node, next successor
    std::vector<bool> onPath(n, false);
    onPath[0] = true;
    while (!stack.empty()) {
      auto& [v, i] = stack.back();
      if (i < succ[v].size()) {
        size_t s = succ[v][i++];
        if (!onPath[s]) { onPath[s] = true; stack.push_back({s, 0}); }
      } else {
        post[v] = static_cast<uint32_t>(order.size());
        order.push_back(v);
        stack.pop_back();
      }
    }
  }
  // Predecessors (reachable ones only) in one array: predStart[v]..predStart[v+1].
  std::vector<uint32_t> predStart(n + 1, 0), predList;
  for (size_t v = 0; v < n; v++)
    if (post[v] != kNone)
      for (uint32_t s : succ[v]) predStart[s + 1]++;
  for (size_t v = 0; v < n; v++) predStart[v + 1] += predStart[v];
  predList.resize(predStart[n]);
  {
    std::vector<uint32_t> fill(predStart.begin(), predStart.end() - 1);
    for (size_t v = 0; v < n; v++)
      if (post[v] != kNone)
        for (uint32_t s : succ[v]) predList[fill[s]++] = static_cast<uint32_t>(v);
  }
  std::vector<uint32_t> idom(n, kNone);
  idom[0] = 0;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (post[a] < post[b]) a = idom[a];
      while (post[b] < post[a]) b = idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = order.size(); k-- > 0;) {  // reverse postorder
      uint32_t v = static_cast<uint32_t>(order[k]);
      if (v == 0) continue;
      uint32_t d = kNone;
      for (uint32_t k2 = predStart[v]; k2 < predStart[v + 1]; k2++) {
        const uint32_t p = predList[k2];
        if (idom[p] != kNone) d = d == kNone ? p : intersect(p, d);
      }
      if (d != kNone && idom[v] != d) { idom[v] = d; changed = true; }
    }
  }
  // The tree's children in one array, as the predecessors above.
  std::vector<uint32_t> kidStart(n + 1, 0), kidList;
  for (size_t v = 1; v < n; v++)
    if (idom[v] != kNone) kidStart[idom[v] + 1]++;
  for (size_t v = 0; v < n; v++) kidStart[v + 1] += kidStart[v];
  kidList.resize(kidStart[n]);
  {
    std::vector<uint32_t> fill(kidStart.begin(), kidStart.end() - 1);
    for (size_t v = 1; v < n; v++)
      if (idom[v] != kNone) kidList[fill[idom[v]]++] = static_cast<uint32_t>(v);
  }
  uint32_t clock = 1;
  std::vector<std::pair<uint32_t, uint32_t>> stack{{0, kidStart[0]}};  // node, next child index
  domIn[0] = clock++;
  while (!stack.empty()) {
    auto& [v, i] = stack.back();
    if (i < kidStart[v + 1]) {
      uint32_t c = kidList[i++];
      domIn[c] = clock++;
      stack.push_back({c, kidStart[c]});
    } else {
      domOut[v] = clock++;
      stack.pop_back();
    }
  }
}

// Dominators of every node from the caller's entry (node 0), computed once
// per caller so that each of its (often hundreds of) inlined bodies costs
// only its own size; on the basic blocks (CodeGraph::blockOf).
void computeDominators(CodeGraph& g) {
  const size_t n = g.nodes.size();
  g.blockOf.assign(n, 0);
  std::vector<uint32_t> last;  // the last node of each block
  for (size_t i = 0; i < n; i++) {
    // Node i goes on with i-1's block when i-1's one way out is i and i's
    // one way in is i-1.
    const bool continues = i > 0 && g.succ[i - 1].size() == 1 && g.succ[i - 1][0] == i && g.preds[i] == 1;
    if (!continues && i > 0) last.push_back(static_cast<uint32_t>(i - 1));
    g.blockOf[i] = continues ? g.blockOf[i - 1] : static_cast<uint32_t>(last.size());
  }
  if (n > 0) last.push_back(static_cast<uint32_t>(n - 1));
  std::vector<CodeGraph::Successors> blockSucc(last.size());
  for (size_t b = 0; b < last.size(); b++)
    for (uint32_t s : g.succ[last[b]]) blockSucc[b].push_back(g.blockOf[s]);
  dominatorIntervals(blockSucc, g.domIn, g.domOut);
}

CodeGraph buildGraph(const FunctionCode& code, std::span<const uint8_t> bytes) {
  CodeGraph g;
  const uint64_t span = code.bodyEnd > code.entry ? code.bodyEnd - code.entry : 0;
  g.entry = code.entry;
  g.span = span;
  g.bits = &code.boundaryBits;
  g.setBefore.resize(code.boundaryBits.size());
  for (size_t w = 0, n = 0; w < code.boundaryBits.size(); w++) {
    g.setBefore[w] = static_cast<uint32_t>(n);
    n += static_cast<size_t>(std::popcount(code.boundaryBits[w]));
  }
  // A node per instruction start in [entry, bodyEnd), from it to the next
  // start (the last to bodyEnd), read off the boundary bits in order; the
  // first that does not fit in `bytes` ends the nodes.
  g.nodes.reserve(code.instructionCount);
  bool fits = true;
  std::optional<uint64_t> start;  // offset of the instruction whose end is not known yet
  const auto node = [&](uint64_t endOff) {
    if (endOff > bytes.size()) {
      fits = false;
      return;
    }
    g.nodes.push_back(decodeNode(code.entry + *start, bytes.subspan(*start, endOff - *start)));
    g.indirect = g.indirect || g.nodes.back().indirectJump;
  };
  for (size_t w = 0; w < code.boundaryBits.size() && fits; w++)
    for (uint64_t word = code.boundaryBits[w]; word != 0 && fits; word &= word - 1) {
      const uint64_t off = w * 64 + static_cast<uint64_t>(std::countr_zero(word));
      if (off >= span) break;
      if (start) node(off);
      start = off;
    }
  if (start && fits) node(code.bodyEnd - code.entry);
  g.succ.resize(g.nodes.size());
  g.preds.assign(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (g.nodes[i].fallsThrough && i + 1 < g.nodes.size()) g.succ[i].push_back(i + 1);
    if (g.nodes[i].hasTarget) {
      size_t t = g.indexOf(g.nodes[i].targetAddr);
      if (t < g.nodes.size()) g.succ[i].push_back(t);
    }
    for (size_t s : g.succ[i]) g.preds[s]++;
  }
  computeDominators(g);
  return g;
}


// Whether a path from `from`'s successors comes back to `from` moving only
// through the nodes [from, end) (indices: address order). The seen set spans
// only that window, so a body costs its own size, not its caller's.
bool loopsBackWithin(const CodeGraph& g, size_t from, size_t end) {
  std::vector<bool> seen(end - from, false);
  std::vector<size_t> todo(g.succ[from].begin(), g.succ[from].end());
  while (!todo.empty()) {
    size_t n = todo.back();
    todo.pop_back();
    if (n == from) return true;
    if (n < from || n >= end || seen[n - from]) continue;
    seen[n - from] = true;
    for (size_t s : g.succ[n]) todo.push_back(s);
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
  for (const auto& [lo, hi] : body) {
    auto it = std::lower_bound(g.nodes.begin(), g.nodes.end(), lo, [](const Node& n, uint64_t a) { return n.addr < a; });
    for (; it != g.nodes.end() && it->addr < hi; ++it) inBody.push_back(static_cast<size_t>(it - g.nodes.begin()));
  }
  std::sort(inBody.begin(), inBody.end());
  inBody.erase(std::unique(inBody.begin(), inBody.end()), inBody.end());
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
  // A body instruction that a path from the caller's entry reaches without
  // passing E (E does not dominate it) is entered some other way.
  {
    for (size_t b : inBody)
      if (b != e && !g.dominates(e, b)) {
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
  const size_t spanEndIdx = static_cast<size_t>(
      std::lower_bound(g.nodes.begin() + static_cast<std::ptrdiff_t>(e), g.nodes.end(), spanEnd,
                       [](const Node& n, uint64_t a) { return n.addr < a; }) - g.nodes.begin());
  if (loopsBackWithin(g, e, spanEndIdx)) {
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
    if (!g.nodes[p].fallsThrough || g.nodes[p].hasTarget || next >= g.nodes.size() || g.preds[next] != 1 ||
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

// One pass for all of a caller's calls: a caller with hundreds of inlined
// calls costs calls x depth, not calls squared.
std::vector<std::vector<std::pair<uint64_t, uint64_t>>> bodiesOf(const std::vector<InlinedCall>& calls) {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> bodies(calls.size());
  for (size_t j = 0; j < calls.size(); j++) {
    int k = static_cast<int>(j);
    // The guard stops a parent cycle in a damaged table.
    for (size_t guard = 0; k >= 0 && k < static_cast<int>(calls.size()) && guard <= calls.size(); guard++) {
      auto& r = bodies[static_cast<size_t>(k)];
      r.insert(r.end(), calls[j].ranges.begin(), calls[j].ranges.end());
      k = calls[static_cast<size_t>(k)].parentIndex;
    }
  }
  for (auto& r : bodies) std::sort(r.begin(), r.end());
  return bodies;
}

InstructionFlow instructionFlow(uint64_t addr, std::span<const uint8_t> bytes) {
  const Node n = decodeNode(addr, bytes);
  return {n.fallsThrough && !n.hasTarget && !n.indirectJump, n.isNop};
}

void placeInlinedProbe(const FunctionCode& code, std::span<const uint8_t> bytes,
                       const std::vector<std::pair<uint64_t, uint64_t>>& body, uint64_t parentPc, InlinedSite& site) {
  InlinePlacer(code, bytes).place(body, parentPc, site);
}

}  // namespace goscope
