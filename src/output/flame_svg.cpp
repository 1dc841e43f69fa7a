#include "output/flame_svg.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

namespace goscope::output {

namespace {

constexpr int kFrameHeight = 16, kFontSize = 12, kPad = 10, kTop = 48, kBottom = 28;
constexpr double kCharWidth = 0.59;  // of the font size, as flamegraph.pl assumes for Verdana

// The stacks merged into a tree: children by name, in name order (a flame
// graph, not a flame chart: time order is not kept).
struct Node {
  std::string name;
  uint64_t count = 0;
  std::map<std::string, std::unique_ptr<Node>> children;
};

// flamegraph.pl's "hot" palette, keyed on the name so a function keeps its colour.
std::string colour(const std::string& name) {
  const size_t h = std::hash<std::string>{}(name);
  const double v1 = static_cast<double>(h & 0xff) / 255, v2 = static_cast<double>((h >> 8) & 0xff) / 255,
               v3 = static_cast<double>((h >> 16) & 0xff) / 255;
  char buf[32];
  std::snprintf(buf, sizeof buf, "rgb(%d,%d,%d)", 205 + static_cast<int>(50 * v3), static_cast<int>(230 * v1),
                static_cast<int>(55 * v2));
  return buf;
}

// The label a frame `px` pixels wide shows: the name, cut with ".." to fit.
std::string label(const std::string& name, double px) {
  const size_t fits = static_cast<size_t>(px / (kFontSize * kCharWidth));
  if (fits < 3) return "";
  if (name.size() <= fits) return name;
  return name.substr(0, fits - 2) + "..";
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Click-to-zoom, search and reset, on the frames' data-x/-w/-d (in counts and depth).
constexpr const char* kScript = R"JS(
var W, XPAD, FONT, TOTAL, frames, details, matchedtxt, zoomed = null, searching = null;
function init() {
  var s = document.documentElement;
  W = +s.getAttribute("data-width"); XPAD = +s.getAttribute("data-pad"); FONT = +s.getAttribute("data-font");
  TOTAL = +s.getAttribute("data-total");
  frames = document.getElementsByClassName("f");
  details = document.getElementById("details"); matchedtxt = document.getElementById("matched");
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i];
    g.onclick = function () { zoom(this); };
    g.onmouseover = function () { details.textContent = "Function: " + title(this); };
    g.onmouseout = function () { details.textContent = " "; };
  }
  document.getElementById("reset").onclick = function () { zoom(null); };
  document.getElementById("search").onclick = function () { search(); };
}
function title(g) { return g.getElementsByTagName("title")[0].textContent; }
function fname(g) { return title(g).replace(/ \([^(]*\)$/, ""); }
function num(g, k) { return +g.getAttribute("data-" + k); }
function place(g, x, w) {
  var r = g.getElementsByTagName("rect")[0], t = g.getElementsByTagName("text")[0];
  r.setAttribute("x", x); r.setAttribute("width", w); t.setAttribute("x", x + 3);
  var n = fname(g), fits = Math.floor(w / (FONT * 0.59));
  t.textContent = fits < 3 ? "" : n.length <= fits ? n : n.substring(0, fits - 2) + "..";
}
function zoom(z) {
  zoomed = z;
  var zx = z ? num(z, "x") : 0, zw = z ? num(z, "w") : TOTAL, zd = z ? num(z, "d") : 0;
  var scale = (W - 2 * XPAD) / zw;
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i], x = num(g, "x"), w = num(g, "w"), d = num(g, "d");
    var inside = x >= zx && x + w <= zx + zw, below = d < zd && x <= zx && x + w >= zx + zw;
    g.style.display = inside || below ? "" : "none";
    g.style.opacity = below ? 0.5 : "";
    if (below) place(g, XPAD, W - 2 * XPAD);
    else if (inside) place(g, XPAD + (x - zx) * scale, w * scale);
  }
  document.getElementById("reset").style.opacity = z ? 1 : 0.3;
}
function search() {
  var term = prompt("Search frames for (a regular expression; empty: clear)", searching || "");
  if (term === null) return;
  var re = term ? new RegExp(term) : null, spans = [];
  searching = term || null;
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i], r = g.getElementsByTagName("rect")[0];
    if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
    var hit = re && re.test(fname(g));
    r.setAttribute("fill", hit ? "rgb(230,0,230)" : r.getAttribute("data-fill"));
    if (hit) spans.push([num(g, "x"), num(g, "x") + num(g, "w")]);
  }
  spans.sort(function (a, b) { return a[0] - b[0]; });
  var sum = 0, end = -1;
  for (var j = 0; j < spans.length; j++) {
    var a = Math.max(spans[j][0], end);
    if (spans[j][1] > a) sum += spans[j][1] - a;
    end = Math.max(end, spans[j][1]);
  }
  matchedtxt.textContent = re ? "Matched: " + (100 * sum / TOTAL).toFixed(1) + "%" : " ";
}
)JS";

}  // namespace

std::string xmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0 (a name cannot hold
        // them, but a label must never make the file unreadable).
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string flameGraphSvg(const std::map<std::string, uint64_t>& folded, const FlameOptions& o) {
  Node root{"all", 0, {}};
  int depth = 0;
  for (const auto& [line, count] : folded) {
    if (count == 0) continue;
    root.count += count;
    Node* at = &root;
    int d = 0;
    for (size_t start = 0; start <= line.size();) {
      size_t end = line.find(';', start);
      if (end == std::string::npos) end = line.size();
      std::string name = line.substr(start, end - start);
      auto& child = at->children[name];
      if (!child) child = std::make_unique<Node>(Node{name, 0, {}});
      child->count += count;
      at = child.get();
      d++;
      start = end + 1;
    }
    depth = std::max(depth, d);
  }
  const double usable = o.width - 2.0 * kPad;
  const double perCount = root.count ? usable / static_cast<double>(root.count) : 0;
  const int height = kTop + (depth + 1) * kFrameHeight + kBottom;
  std::string svg;
  svg += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  svg += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(o.width) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(o.width) + " " + std::to_string(height) +
         "\" onload=\"init()\" data-width=\"" + std::to_string(o.width) + "\" data-pad=\"" + std::to_string(kPad) +
         "\" data-font=\"" + std::to_string(kFontSize) + "\" data-total=\"" + std::to_string(root.count) + "\">\n";
  svg += "<style>text { font-family: Verdana, sans-serif; font-size: " + std::to_string(kFontSize) +
         "px; fill: rgb(0,0,0); } .f:hover rect { stroke: black; stroke-width: 0.5; cursor: pointer; } "
         "#title { font-size: 17px; text-anchor: middle; } .button { cursor: pointer; }</style>\n";
  svg += "<script type=\"text/ecmascript\"><![CDATA[" + std::string(kScript) + "]]></script>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(248,248,248)\"/>\n";
  svg += "<text id=\"title\" x=\"" + std::to_string(o.width / 2) + "\" y=\"24\">" + xmlEscape(o.title) + "</text>\n";
  if (!o.subtitle.empty())
    svg += "<text x=\"" + std::to_string(o.width / 2) + "\" y=\"40\" style=\"text-anchor: middle; fill: rgb(90,90,90)\">" +
           xmlEscape(o.subtitle) + "</text>\n";
  svg += "<text id=\"reset\" class=\"button\" x=\"" + std::to_string(kPad) + "\" y=\"24\" style=\"opacity: 0.3\">Reset Zoom</text>\n";
  svg += "<text id=\"search\" class=\"button\" x=\"" + std::to_string(o.width - kPad - 60) + "\" y=\"24\">Search</text>\n";
  svg += "<text id=\"matched\" x=\"" + std::to_string(o.width - kPad - 110) + "\" y=\"" + std::to_string(height - 10) +
         "\"> </text>\n";
  svg += "<text id=\"details\" x=\"" + std::to_string(kPad) + "\" y=\"" + std::to_string(height - 10) + "\"> </text>\n";
  if (root.count == 0) svg += "<text x=\"" + std::to_string(kPad) + "\" y=\"" + std::to_string(kTop + 12) + "\">(no stacks)</text>\n";
  svg += "<g id=\"frames\">\n";
  // Depth first; x in counts from the left, depth 0 (root) at the bottom.
  std::function<void(const Node&, uint64_t, int)> draw = [&](const Node& n, uint64_t x, int d) {
    const double px = kPad + static_cast<double>(x) * perCount, pw = static_cast<double>(n.count) * perCount;
    const double y = kTop + static_cast<double>(depth - d) * kFrameHeight;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f%%", root.count ? 100.0 * static_cast<double>(n.count) / static_cast<double>(root.count) : 0);
    svg += "<g class=\"f\" data-x=\"" + std::to_string(x) + "\" data-w=\"" + std::to_string(n.count) + "\" data-d=\"" +
           std::to_string(d) + "\"><title>" + xmlEscape(n.name) + " (" + std::to_string(n.count) +
           (n.count == 1 ? " sample, " : " samples, ") + pct + ")</title><rect x=\"" + num(px) + "\" y=\"" + num(y) +
           "\" width=\"" + num(pw) + "\" height=\"" + std::to_string(kFrameHeight - 1) + "\" fill=\"" +
           (d == 0 ? std::string("rgb(200,200,200)") : colour(n.name)) + "\" rx=\"2\" ry=\"2\"/><text x=\"" +
           num(px + 3) + "\" y=\"" + num(y + kFrameHeight - 4.5) + "\">" + xmlEscape(label(n.name, pw)) + "</text></g>\n";
    uint64_t cx = x;
    for (const auto& [name, child] : n.children) {
      draw(*child, cx, d + 1);
      cx += child->count;
    }
  };
  if (root.count) draw(root, 0, 0);
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace goscope::output
