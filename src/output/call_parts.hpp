// The pieces of a call that both formats print: named values, raw argument
// registers, stack frames. Internal to src/output.
#pragma once

#include <boost/json.hpp>

#include <charconv>
#include <string>
#include <vector>

#include "api/goscope.hpp"

namespace goscope::output {

// "x=1, s=\"a\"" (`sep` between); results: unnamed ones (`~r0`) without "name=".
std::string assignments(const std::vector<Value>& values, const char* sep, bool results = false);
boost::json::object namedJson(const std::vector<Value>& values);
boost::json::array valueArray(const std::vector<Value>& values);

// Arguments by position (Call::argsPositional): "0x2a, {0x1, 0x2}, ..." and
// JSON [42,[1,2],"..."]. A value that has a name (a typed receiver) is
// printed with it in text: "recv=main.Point{X: 1}, 0x2".
void appendPositional(const std::vector<Value>& values, bool more, std::string& out);
void appendPositionalJson(const std::vector<Value>& values, bool more, std::string& out);
boost::json::array positionalJson(const std::vector<Value>& values, bool more);

// The first four argument registers: "rax=0x1, rbx=0x2, rcx=0x3, rdi=0x4".
std::string registersText(const std::array<uint64_t, 9>& regs, size_t n = 4);
boost::json::object registersJson(const std::array<uint64_t, 9>& regs);

template <typename Int>
void appendDecimal(Int x, std::string& out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
}

// The same pieces appended to a line buffer (trace's hot path; value/render.hpp).
void appendAssignments(const std::vector<Value>& values, const char* sep, std::string& out, bool results = false);
void appendNamedJson(const std::vector<Value>& values, std::string& out);
void appendValueArray(const std::vector<Value>& values, std::string& out);
void appendRegistersText(const std::array<uint64_t, 9>& regs, size_t n, std::string& out);

std::string baseName(const std::string& path);
// "main.add /src/main.go:24" ("(inlined)" after an inlined call), or the pc in hex.
std::string frameText(const api::Frame& f);
// "main.add main.go:24" (base name of the file), or the pc in hex.
std::string shortFrameText(const api::Frame& f);

}  // namespace goscope::output
