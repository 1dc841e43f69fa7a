// Field visitors that read and write JSON the way Go's encoding/json does, so
// one `describe(visitor, struct)` per Delve type serves both directions and
// the key list exists exactly once.
//
// Go's rules, mirrored: unknown keys are ignored; a missing key or a null
// leaves the field at its zero value; a value of the wrong JSON type is an
// error (we name the key path). Writing: a nil slice, map or pointer is null
// (empty std::vector / std::map / std::optional stand for nil), and
// `omitempty` fields are left out when zero.
#pragma once

#include <boost/json.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "util/result.hpp"

namespace goscope::rpc {

// A struct field's Go tag: `json:"key"` or `json:"key,omitempty"`.
enum class Go { Always, OmitEmpty };

class JsonReader;
class JsonWriter;

// Every mirrored struct provides `void describe(V&, T&)` for both visitors
// (defined next to the struct's codec, found by argument-dependent lookup).
template <class T>
concept Described = requires(JsonReader& r, T& t) { describe(r, t); };

class JsonReader {
 public:
  // Visits one field of the object being read.
  template <class T>
  void operator()(std::string_view key, T& member, Go = Go::Always) {
    if (!error_.empty() || object_ == nullptr) return;
    const boost::json::value* v = object_->if_contains(key);
    if (v == nullptr || v->is_null()) return;
    path_.push_back(std::string(key));
    read(*v, member);
    path_.pop_back();
  }

  void read(const boost::json::value& v, bool& out) {
    if (v.is_bool()) out = v.get_bool();
    else mismatch("a boolean", v);
  }
  void read(const boost::json::value& v, std::string& out) {
    if (v.is_string()) out.assign(v.get_string().data(), v.get_string().size());
    else mismatch("a string", v);
  }
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  void read(const boost::json::value& v, I& out) {
    // Go refuses fractions and out-of-range numbers for integer fields.
    if (v.is_int64()) {
      int64_t x = v.get_int64();
      if (std::is_signed_v<I> ? (x >= static_cast<int64_t>(std::numeric_limits<I>::min()) &&
                                 (std::is_same_v<I, int64_t> || x <= static_cast<int64_t>(std::numeric_limits<I>::max())))
                              : (x >= 0 && static_cast<uint64_t>(x) <= static_cast<uint64_t>(std::numeric_limits<I>::max()))) {
        out = static_cast<I>(x);
        return;
      }
    } else if (v.is_uint64()) {
      uint64_t x = v.get_uint64();
      if (x <= static_cast<uint64_t>(std::numeric_limits<I>::max())) {
        out = static_cast<I>(x);
        return;
      }
    }
    mismatch("an integer in range", v);
  }
  template <class T>
  void read(const boost::json::value& v, std::vector<T>& out) {
    if (!v.is_array()) return mismatch("an array", v);
    out.clear();
    out.reserve(v.get_array().size());
    for (const auto& e : v.get_array()) {
      if (!error_.empty()) return;
      out.emplace_back();
      if (!e.is_null()) read(e, out.back());
    }
  }
  template <class T, size_t N>
  void read(const boost::json::value& v, std::array<T, N>& out) {
    if (!v.is_array()) return mismatch("an array", v);
    const auto& a = v.get_array();  // Go: extra elements dropped, missing ones zero
    for (size_t i = 0; i < N && i < a.size(); ++i)
      if (!a[i].is_null()) read(a[i], out[i]);
  }
  template <class T>
  void read(const boost::json::value& v, std::map<std::string, T>& out) {
    if (!v.is_object()) return mismatch("an object", v);
    out.clear();
    for (const auto& kv : v.get_object()) {
      if (!error_.empty()) return;
      T item{};
      if (!kv.value().is_null()) read(kv.value(), item);
      out.emplace(std::string(kv.key()), std::move(item));
    }
  }
  template <class T>
  void read(const boost::json::value& v, std::optional<T>& out) {
    out.emplace();
    read(v, *out);
  }
  template <Described T>
  void read(const boost::json::value& v, T& out) {
    if (!v.is_object()) return mismatch("an object", v);
    const boost::json::object* saved = std::exchange(object_, &v.get_object());
    describe(*this, out);
    object_ = saved;
  }

  // Reads a whole value; a top-level null leaves `out` as it is.
  template <class T>
  Result<void> decode(const boost::json::value& v, T& out, std::string_view what) {
    if (!v.is_null()) read(v, out);
    if (error_.empty()) return {};
    return fail(ErrorKind::External, "unexpected JSON from dlv in " + std::string(what) + ": " + error_);
  }

 private:
  void mismatch(const char* expected, const boost::json::value& v) {
    if (!error_.empty()) return;
    std::string path;
    for (const auto& p : path_) path += (path.empty() ? "" : ".") + p;
    error_ = (path.empty() ? std::string("value") : path) + " should be " + expected + ", got " +
             boost::json::serialize(v).substr(0, 40);
  }

  const boost::json::object* object_ = nullptr;
  std::vector<std::string> path_;
  std::string error_;
};

class JsonWriter {
 public:
  // Visits one field: adds it to the object under construction.
  template <class T>
  void operator()(std::string_view key, const T& member, Go tag = Go::Always) {
    if (tag == Go::OmitEmpty && isZero(member)) return;
    object_[key] = write(member);
  }

  static boost::json::value write(bool b) { return b; }
  static boost::json::value write(const std::string& s) { return boost::json::string(s); }
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  static boost::json::value write(I x) {
    if constexpr (std::is_signed_v<I>) return static_cast<int64_t>(x);
    else return static_cast<uint64_t>(x);
  }
  template <class T>
  static boost::json::value write(const std::vector<T>& v) {
    if (v.empty()) return nullptr;  // a nil slice
    boost::json::array a;
    a.reserve(v.size());
    for (const auto& e : v) a.push_back(write(e));
    return a;
  }
  template <class T, size_t N>
  static boost::json::value write(const std::array<T, N>& v) {
    boost::json::array a;
    for (const auto& e : v) a.push_back(write(e));
    return a;
  }
  template <class T>
  static boost::json::value write(const std::map<std::string, T>& m) {
    if (m.empty()) return nullptr;  // a nil map
    boost::json::object o;
    for (const auto& [k, v] : m) o[k] = write(v);
    return o;
  }
  template <class T>
  static boost::json::value write(const std::optional<T>& p) {
    if (!p) return nullptr;  // a nil pointer
    return write(*p);
  }
  template <Described T>
  static boost::json::value write(const T& s) {
    JsonWriter w;
    // describe() takes T& so that one function serves reading too; the
    // writer only reads the members.
    describe(w, const_cast<T&>(s));
    return std::move(w.object_);
  }

 private:
  template <class T>
  static bool isZero(const T& v) {
    if constexpr (std::is_arithmetic_v<T>) return v == T{};
    else if constexpr (requires { v.empty(); }) return v.empty();
    else if constexpr (requires { v.has_value(); }) return !v.has_value();
    else return false;  // structs are never empty for Go's omitempty
  }

  boost::json::object object_;
};

}  // namespace goscope::rpc
