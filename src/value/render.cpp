#include "value/render.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/json_text.hpp"
#include "value/go_quote.hpp"

namespace goscope {

namespace {

namespace json = boost::json;
using K = Value::Kind;

std::string hexText(uint64_t x) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
  return buf;
}

// Valid UTF-8 for JSON: invalid bytes become U+FFFD.
std::string utf8Sanitized(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; k++) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i++;
    }
  }
  return out;
}

int floatBits(const Value& v) { return v.type == "float32" || v.type == "complex64" ? 32 : 64; }

json::value floatJson(double f, int bits) {
  if (std::isfinite(f)) return f;
  return json::string(goFloat(f, bits));  // JSON has no NaN or infinities
}

std::string typeOr(const Value& v, const char* fallback) { return v.type.empty() ? fallback : v.type; }

// Anonymous struct types print as `struct`, as Go's %#v does not spell them out.
std::string structName(const Value& v) {
  return v.type.empty() || v.type.starts_with("struct {") || v.type.starts_with("struct{") ? std::string("struct") : v.type;
}

std::string quoted(const std::string& bytes, uint64_t fullLen) {
  std::string text = quoteGo(bytes);
  if (fullLen > bytes.size()) {
    text.insert(text.size() - 1, "…");
    text += "(+" + std::to_string(fullLen - bytes.size()) + " bytes)";
  }
  return text;
}

// ", …" after the elements shown when there are more.
std::string elementsText(const Value& v, const char* open) {
  std::string text = open;
  for (size_t i = 0; i < v.children.size(); i++) text += (i ? ", " : "") + renderText(v.children[i]);
  if (v.children.size() < v.len) text += v.children.empty() ? "…" : ", …";
  return text;
}

// A value its path did not load (past Delve's load depth, a struct past the
// direct read's, past the BPF decoder's depth: an Unavailable with its type):
// cut, whatever its kind, in one form on every path: never `…` alone nor,
// in JSON, null, which would read as nil. A slice without its elements says
// so in its own form.
bool isCut(const Value& v) { return v.elided && v.kind != K::Slice; }

// JSON for a cut value: an object that cannot be read as nil or as a Go
// string, with what is known for a follow-up read (`*(*T)(addr)`).
json::value cutJson(const Value& v) {
  json::object o{{"cut", true}, {"type", v.type}};
  if (v.address) o["addr"] = hexText(v.address);
  if (v.kind == K::Map) o["len"] = v.len;  // entries Delve counted
  return o;
}

// Shown in part: a string with fewer bytes than its length (the capture's
// --max-string), an array or a map with fewer elements than it has. JSON
// gives such a value as an object marked cut with its full length, never
// as a string or an array that would read as the whole value; text ends it
// with `…`.
bool shownInPart(const Value& v) {
  switch (v.kind) {
    case K::String: return v.len > v.text.size();
    case K::Array: return v.children.size() < v.len;
    case K::Map: return !v.nil && v.children.size() / 2 < v.len;
    default: return false;
  }
}

// A slice whose elements were shown in part, or not at all (past the
// path's depth); one whose elements could not be read says why instead.
bool sliceCut(const Value& v) {
  return v.kind == K::Slice && !v.nil && v.len > 0 && v.elementsUnavailable.empty() &&
         (v.elided || v.children.size() < v.len);
}

json::value partJson(const Value& v);
json::value mapEntriesJson(const Value& v);

std::string text(const Value& v) {
  if (isCut(v) && v.kind != K::Struct && v.kind != K::Map) return "{…}";
  switch (v.kind) {
    case K::Unavailable: return "<" + v.unavailable + ">";
    case K::Bool: return v.boolean ? "true" : "false";
    case K::Int: return std::to_string(v.i);
    case K::Uint: return v.type == "uintptr" ? hexText(v.u) : std::to_string(v.u);
    case K::Float: return goFloat(v.f, floatBits(v));
    case K::Complex: {
      std::string im = goFloat(v.imag, floatBits(v));
      if (im[0] != '-' && im[0] != '+') im = "+" + im;
      return "(" + goFloat(v.f, floatBits(v)) + im + "i)";
    }
    case K::String: return quoted(v.text, v.len);
    case K::Slice: {
      if (v.nil) return typeOr(v, "[]") + "(nil)";
      std::string head = v.type + "{len=" + std::to_string(v.len) + " cap=" + std::to_string(v.cap);
      if (v.len == 0 || v.elided) return head + "}";
      if (!v.elementsUnavailable.empty()) return head + ": <" + v.elementsUnavailable + ">}";
      std::string text = head + ":";
      for (size_t i = 0; i < v.children.size(); i++) text += (i ? ", " : " ") + renderText(v.children[i]);
      if (v.children.size() < v.len) text += v.children.empty() ? " …" : ", …";
      return text + "}";
    }
    case K::Array: return elementsText(v, (v.type + "{").c_str()) + "}";
    case K::Group: {
      std::string text = elementsText(v, "{");
      if (v.more) text += v.children.empty() ? "..." : ", ...";
      return text + "}";
    }
    case K::Map: {
      if (v.nil) return typeOr(v, "map") + "(nil)";
      std::string text = v.type + "{len=" + std::to_string(v.len);
      if (v.len == 0) return text + "}";
      text += ":";
      for (size_t i = 0; i + 1 < v.children.size(); i += 2)
        text += (i ? ", " : " ") + renderText(v.children[i]) + ": " + renderText(v.children[i + 1]);
      if (v.children.size() / 2 < v.len) text += v.children.empty() ? " …" : ", …";
      return text + "}";
    }
    case K::Struct: {
      if (v.elided) return structName(v) + "{…}";
      std::string text = structName(v) + "{";
      for (size_t i = 0; i < v.children.size(); i++)
        text += (i ? ", " : "") + v.children[i].name + ": " + renderText(v.children[i]);
      return text + "}";
    }
    case K::Pointer:
      if (v.nil) return "nil";
      if (!v.children.empty()) return "&" + renderText(v.children[0]);
      return hexText(v.address);
    case K::UnsafePointer: return v.nil ? "nil" : hexText(v.address);
    case K::Interface: {
      if (v.nil) return "nil";
      std::string dyn = !v.dynamicType.empty() ? v.dynamicType : v.text.empty() ? "?" : v.text;
      std::string text = v.type + "(" + dyn + ")";
      text += v.children.empty() ? hexText(v.address) : renderText(v.children[0]);
      if (v.errorText) {
        text += " " + quoteGo(*v.errorText);
        if (v.errorTextMissing) text += "(+" + std::to_string(v.errorTextMissing) + " bytes)";
      }
      return text;
    }
    case K::Chan:
      if (v.nil) return "nil";
      return v.type + "{len=" + std::to_string(v.len) + " cap=" + std::to_string(v.cap) + "}";
    case K::Func:
      if (v.nil) return "nil";
      return v.text.empty() ? hexText(v.address) : v.text;
  }
  return "?";
}

}  // namespace

std::string goFloat(double f, int bits) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  char sci[64];
  auto r = bits == 32 ? std::to_chars(sci, sci + sizeof sci, static_cast<float>(f), std::chars_format::scientific)
                      : std::to_chars(sci, sci + sizeof sci, f, std::chars_format::scientific);
  std::string s(sci, r.ptr);
  auto e = s.find('e');
  int exp = std::stoi(s.substr(e + 1));
  if (exp < -4 || exp >= 21) {
    std::string mant = s.substr(0, e);
    std::string ex = s.substr(e + 1);
    char sign = ex[0] == '-' ? '-' : '+';
    std::string digits = ex.substr(ex[0] == '-' || ex[0] == '+' ? 1 : 0);
    while (digits.size() > 1 && digits[0] == '0') digits.erase(0, 1);
    if (digits.size() < 2) digits = "0" + digits;
    return mant + "e" + sign + digits;
  }
  char fixed[400];
  r = bits == 32 ? std::to_chars(fixed, fixed + sizeof fixed, static_cast<float>(f), std::chars_format::fixed)
                 : std::to_chars(fixed, fixed + sizeof fixed, f, std::chars_format::fixed);
  return std::string(fixed, r.ptr);
}

std::string renderText(const Value& v) { return text(v); }

namespace {

// Bytes that print as themselves in Go's quoting and in JSON alike.
bool plainAscii(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
  return true;
}

template <typename Int>
void appendInt(Int x, std::string& out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
}

void appendHex(uint64_t x, std::string& out) {
  char buf[24] = {'0', 'x'};
  auto r = std::to_chars(buf + 2, buf + sizeof buf, x, 16);
  out.append(buf, r.ptr);
}

// boost::json::object keeps the first position of a repeated key and the
// last value: rare (blank `_` fields); the tree is built for those.
bool repeatedNames(const std::vector<Value>& children) {
  for (size_t i = 1; i < children.size(); i++)
    for (size_t j = 0; j < i; j++)
      if (children[i].name == children[j].name) return true;
  return false;
}

// A string with nothing to escape, quoted: the same text in Go syntax and in
// JSON, and the common case per event (the rest goes through text()/jsonText).
bool appendPlainQuoted(std::string_view text, std::string& out) {
  if (!plainAscii(text)) return false;
  out += '"';
  out += text;
  out += '"';
  return true;
}

}  // namespace

void appendJsonString(std::string_view s, std::string& out) {
  if (!plainAscii(s)) {
    out += boost::json::serialize(s);
    return;
  }
  out += '"';
  out.append(s);
  out += '"';
}

void appendText(const Value& v, std::string& out) {
  if (isCut(v)) {
    out += text(v);
    return;
  }
  switch (v.kind) {
    case K::Bool: out += v.boolean ? "true" : "false"; return;
    case K::Int: appendInt(v.i, out); return;
    case K::Uint:
      if (v.type == "uintptr") appendHex(v.u, out);
      else appendInt(v.u, out);
      return;
    case K::String:
      if (v.len <= v.text.size() && appendPlainQuoted(v.text, out)) return;
      break;
    case K::Pointer:
      if (v.nil) {
        out += "nil";
        return;
      }
      if (v.children.empty()) {
        appendHex(v.address, out);
        return;
      }
      out += '&';
      appendText(v.children[0], out);
      return;
    case K::UnsafePointer:
      if (v.nil) out += "nil";
      else appendHex(v.address, out);
      return;
    case K::Struct:
      out += structName(v);
      out += '{';
      for (size_t i = 0; i < v.children.size(); i++) {
        if (i) out += ", ";
        out += v.children[i].name;
        out += ": ";
        appendText(v.children[i], out);
      }
      out += '}';
      return;
    default: break;
  }
  out += text(v);
}

void appendJson(const Value& v, std::string& out) {
  if (isCut(v)) {
    out += jsonText(cutJson(v));
    return;
  }
  switch (v.kind) {
    case K::Unavailable: out += "null"; return;
    case K::Bool: out += v.boolean ? "true" : "false"; return;
    case K::Int: appendInt(v.i, out); return;
    case K::Uint: appendInt(v.u, out); return;
    case K::String:
      if (!shownInPart(v) && appendPlainQuoted(v.text, out)) return;
      break;
    case K::Pointer:
    case K::UnsafePointer:
      if (v.nil) {
        out += "null";
        return;
      }
      if (v.kind == K::UnsafePointer || v.children.empty()) {
        out += '"';
        appendHex(v.address, out);
        out += '"';
        return;
      }
      out += "{\"addr\":\"";
      appendHex(v.address, out);
      out += "\",\"value\":";
      appendJson(v.children[0], out);
      out += '}';
      return;
    case K::Struct:
      if (repeatedNames(v.children)) break;
      out += '{';
      for (size_t i = 0; i < v.children.size(); i++) {
        if (i) out += ',';
        appendJsonString(v.children[i].name, out);
        out += ':';
        appendJson(v.children[i], out);
      }
      out += '}';
      return;
    case K::Array:
      if (shownInPart(v)) break;
      out += '[';
      for (size_t i = 0; i < v.children.size(); i++) {
        if (i) out += ',';
        appendJson(v.children[i], out);
      }
      out += ']';
      return;
    case K::Slice:
      if (v.nil) {
        out += "null";
        return;
      }
      out += "{\"len\":";
      appendInt(v.len, out);
      out += ",\"cap\":";
      appendInt(v.cap, out);
      if (v.len == 0) {
        out += ",\"elems\":[]";
      } else if (!v.elided && v.elementsUnavailable.empty()) {
        out += ",\"elems\":[";
        for (size_t i = 0; i < v.children.size(); i++) {
          if (i) out += ',';
          appendJson(v.children[i], out);
        }
        out += ']';
      }
      if (!v.elementsUnavailable.empty() && v.len > 0) {
        out += ",\"elems_unavailable\":";
        appendJsonString(v.elementsUnavailable, out);
      }
      if (sliceCut(v)) out += ",\"cut\":true";
      out += '}';
      return;
    default: break;
  }
  out += jsonText(renderJson(v));
}

json::value renderJson(const Value& v) {
  if (isCut(v)) return cutJson(v);  // not null, which would say nil
  switch (v.kind) {
    case K::Unavailable: return nullptr;
    case K::Bool: return v.boolean;
    case K::Int: return v.i;
    case K::Uint: return v.u;
    case K::Float: return floatJson(v.f, floatBits(v));
    case K::Complex: return json::object{{"real", floatJson(v.f, floatBits(v))}, {"imag", floatJson(v.imag, floatBits(v))}};
    case K::String:
      if (shownInPart(v)) return partJson(v);
      return json::string(utf8Sanitized(v.text));
    case K::Slice: {
      if (v.nil) return nullptr;
      json::object o{{"len", v.len}, {"cap", v.cap}};
      if (v.len == 0) {
        o["elems"] = json::array();
      } else if (!v.elided && v.elementsUnavailable.empty()) {
        json::array a;
        for (const auto& c : v.children) a.push_back(renderJson(c));
        o["elems"] = std::move(a);
      }
      if (!v.elementsUnavailable.empty() && v.len > 0) o["elems_unavailable"] = v.elementsUnavailable;
      if (sliceCut(v)) o["cut"] = true;
      return o;
    }
    case K::Array: {
      if (shownInPart(v)) return partJson(v);
      json::array a;
      for (const auto& c : v.children) a.push_back(renderJson(c));
      return a;
    }
    case K::Group: {
      json::array a;
      for (const auto& c : v.children) a.push_back(renderJson(c));
      if (v.more) a.push_back("...");
      return a;
    }
    case K::Map: {
      if (v.nil) return nullptr;
      if (shownInPart(v)) return partJson(v);
      return mapEntriesJson(v);
    }
    case K::Struct: {
      json::object o;
      for (const auto& c : v.children) o[c.name] = renderJson(c);
      return o;
    }
    case K::Pointer:
      if (v.nil) return nullptr;
      if (!v.children.empty()) return json::object{{"addr", hexText(v.address)}, {"value", renderJson(v.children[0])}};
      return json::string(hexText(v.address));
    case K::UnsafePointer: return v.nil ? json::value(nullptr) : json::value(json::string(hexText(v.address)));
    case K::Interface: {
      if (v.nil) return nullptr;
      json::object o{{"type", v.dynamicType.empty() ? json::value(nullptr) : json::value(json::string(v.dynamicType))}};
      // A null type says why beside it (docs/output.md): the type word's
      // address that names no type of the binary, or why it was not read.
      if (v.dynamicType.empty()) o["type_unknown"] = v.text.empty() ? "unnamed" : v.text;
      o["value"] = v.children.empty() ? json::value(json::string(hexText(v.address))) : renderJson(v.children[0]);
      if (v.errorText) {
        o["error"] = utf8Sanitized(*v.errorText);
        // The message's bytes were capped as a string's are: its full length.
        if (v.errorTextMissing) {
          o["error_cut"] = true;
          o["error_len"] = v.errorText->size() + v.errorTextMissing;
        }
      }
      return o;
    }
    case K::Chan:
      if (v.nil) return nullptr;
      return json::object{{"len", v.len}, {"cap", v.cap}};
    case K::Func:
      if (v.nil) return nullptr;
      return json::string(v.text.empty() ? hexText(v.address) : v.text);
  }
  return nullptr;
}

namespace {

json::value mapEntriesJson(const Value& v) {
  json::object o;
  for (size_t i = 0; i + 1 < v.children.size(); i += 2) {
    const Value& key = v.children[i];
    o[key.kind == K::String ? utf8Sanitized(key.text) : renderText(key)] = renderJson(v.children[i + 1]);
  }
  return o;
}

// {"cut":true,"type":T,"len":N, and the part shown: "value" (a string's
// bytes) or "elems" (an array's elements, a map's entries)}.
json::value partJson(const Value& v) {
  json::object o{{"cut", true}, {"type", v.type.empty() && v.kind == K::String ? "string" : v.type}, {"len", v.len}};
  if (v.kind == K::String) {
    o["value"] = utf8Sanitized(v.text);
  } else if (v.kind == K::Map) {
    o["elems"] = mapEntriesJson(v);
  } else {
    json::array a;
    for (const auto& c : v.children) a.push_back(renderJson(c));
    o["elems"] = std::move(a);
  }
  return o;
}

}  // namespace

}  // namespace goscope
