#include "util/json_text.hpp"

#include <charconv>
#include <cmath>

namespace goscope {

namespace {

void write(const boost::json::value& v, std::string& out) {
  switch (v.kind()) {
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(boost::json::string_view(k));
        out += ':';
        write(x, out);
      }
      out += '}';
      return;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& x : v.get_array()) {
        if (!first) out += ',';
        first = false;
        write(x, out);
      }
      out += ']';
      return;
    }
    case boost::json::kind::double_: {
      double d = v.get_double();
      if (!std::isfinite(d)) {
        out += "null";  // JSON has no NaN or infinity
        return;
      }
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
      // Shortest round-trip text in fixed notation; very large or small
      // magnitudes fall back to Boost's exponent form.
      if (r.ec == std::errc() && r.ptr - buf < 32) {
        out.append(buf, r.ptr);
      } else {
        out += boost::json::serialize(v);
      }
      return;
    }
    default: out += boost::json::serialize(v);
  }
}

}  // namespace

std::string jsonText(const boost::json::value& v) {
  std::string out;
  write(v, out);
  return out;
}

}  // namespace goscope
