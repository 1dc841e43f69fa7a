#include "output/call_parts.hpp"

#include "util/hex.hpp"
#include "util/json_text.hpp"
#include "value/render.hpp"

namespace goscope::output {

std::string assignments(const std::vector<Value>& values, const char* sep, bool results) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += sep;
    if (!results || !v.name.starts_with("~r")) out += v.name + "=";
    out += renderText(v);
  }
  return out;
}

boost::json::object namedJson(const std::vector<Value>& values) {
  boost::json::object o;
  for (const auto& v : values) o[v.name] = renderJson(v);
  return o;
}

boost::json::array valueArray(const std::vector<Value>& values) {
  boost::json::array a;
  for (const auto& v : values) a.push_back(renderJson(v));
  return a;
}

std::string registersText(const std::array<uint64_t, 9>& regs, size_t n) {
  std::string s;
  for (size_t i = 0; i < n && i < regs.size(); i++)
    s += (i ? ", " : "") + std::string(api::kArgumentRegisters[i]) + "=" + hex(regs[i]);
  return s;
}

boost::json::object registersJson(const std::array<uint64_t, 9>& regs) {
  return boost::json::object{{"rax", regs[0]}, {"rbx", regs[1]}, {"rcx", regs[2]}, {"rdi", regs[3]}};
}

void appendAssignments(const std::vector<Value>& values, const char* sep, std::string& out, bool results) {
  bool first = true;  // (assignments() tests its output for emptiness: an empty first value adds no separator)
  const size_t start = out.size();
  for (const auto& v : values) {
    if (!first && out.size() > start) out += sep;
    first = false;
    if (!results || !v.name.starts_with("~r")) {
      out += v.name;
      out += '=';
    }
    appendText(v, out);
  }
}

void appendPositional(const std::vector<Value>& values, bool more, std::string& out) {
  for (size_t i = 0; i < values.size(); i++) {
    if (i) out += ", ";
    if (!values[i].name.empty()) out += values[i].name + "=";
    appendText(values[i], out);
  }
  if (more) out += values.empty() ? "..." : ", ...";
}

boost::json::array positionalJson(const std::vector<Value>& values, bool more) {
  boost::json::array a;
  for (const auto& v : values) a.push_back(renderJson(v));
  if (more) a.push_back("...");
  return a;
}

void appendPositionalJson(const std::vector<Value>& values, bool more, std::string& out) {
  out += '[';
  for (size_t i = 0; i < values.size(); i++) {
    if (i) out += ',';
    appendJson(values[i], out);
  }
  if (more) out += values.empty() ? "\"...\"" : ",\"...\"";
  out += ']';
}

void appendNamedJson(const std::vector<Value>& values, std::string& out) {
  for (size_t i = 1; i < values.size(); i++)  // a repeated name: Boost's object keeps one (rare: `_`)
    for (size_t j = 0; j < i; j++)
      if (values[i].name == values[j].name) {
        out += jsonText(namedJson(values));
        return;
      }
  out += '{';
  for (size_t i = 0; i < values.size(); i++) {
    if (i) out += ',';
    appendJsonString(values[i].name, out);
    out += ':';
    appendJson(values[i], out);
  }
  out += '}';
}

void appendValueArray(const std::vector<Value>& values, std::string& out) {
  out += '[';
  for (size_t i = 0; i < values.size(); i++) {
    if (i) out += ',';
    appendJson(values[i], out);
  }
  out += ']';
}

void appendRegistersText(const std::array<uint64_t, 9>& regs, size_t n, std::string& out) { out += registersText(regs, n); }

std::string baseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string frameText(const api::Frame& f) {
  if (!f.known) return hex(f.pc);
  std::string s = f.function + " " + f.file + ":" + std::to_string(f.line);
  if (f.inlined) s += " (inlined)";
  return s;
}

std::string shortFrameText(const api::Frame& f) {
  if (!f.known) return hex(f.pc);
  return f.function + " " + baseName(f.file) + ":" + std::to_string(f.line);
}

}  // namespace goscope::output
