// Fuzz target: an analysis cache file (src/binary/analysis_record.*), as
// goscope reads one from $XDG_CACHE_HOME/goscope/analysis/. The first input
// byte chooses: odd, the rest is a whole file (header checks: magic,
// version, key, length, checksum); even, the rest is a payload wrapped in a
// valid header, so that the record parser itself is reached (a random
// payload almost never matches its checksum). Checks against a made-up
// binary: functions are the 4 KiB pages of [0x400000, 0x500000); its bytes
// are one `call` whose rel32 the address picks. Whatever is accepted must
// survive serialize -> parse -> serialize unchanged.
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "binary/analysis_record.hpp"

using namespace goscope;

namespace {

const GoFunction* functionAt(uint64_t a) {
  static std::map<uint64_t, GoFunction> pages;
  if (a < 0x400000 || a >= 0x500000) return nullptr;
  const uint64_t page = a & ~uint64_t{0xfff};
  auto [it, fresh] = pages.try_emplace(page);
  if (fresh) {
    it->second.name = "main.f" + std::to_string(page);
    it->second.entry = page;
    it->second.end = page + 0x1000;
  }
  return &it->second;
}

std::optional<std::span<const uint8_t>> bytesAt(uint64_t a, size_t n) {
  static uint8_t buf[16];
  if (n > 11 || !functionAt(a)) return std::nullopt;
  // A call to the page's entry: rel32 = entry - (a + 5).
  const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(a & ~uint64_t{0xfff}) - static_cast<int64_t>(a + 5));
  buf[0] = 0xe8;
  std::memcpy(buf + 1, &rel, 4);
  return std::span<const uint8_t>(buf, n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const uint8_t keyBytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const std::span<const uint8_t, 16> key(keyBytes, 16);
  const AnalysisChecks checks{functionAt, bytesAt};
  std::string file;
  if (data[0] & 1) {
    file.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    const uint32_t version = 1;
    const uint64_t length = size - 1, hash = XXH3_64bits(data + 1, size - 1);
    file.append("GSANLYS\n");
    file.append(reinterpret_cast<const char*>(&version), 4);
    file.append(reinterpret_cast<const char*>(keyBytes), 16);
    file.append(reinterpret_cast<const char*>(&length), 8);
    file.append(reinterpret_cast<const char*>(&hash), 8);
    file.append(reinterpret_cast<const char*>(data + 1), size - 1);
  }
  std::string why;
  auto r = parseAnalysis({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, key, checks, &why);
  if (!r) {
    if (why.empty()) __builtin_trap();  // a refusal always says why
    return 0;
  }
  const std::string once = serializeAnalysis(*r, key);
  auto again = parseAnalysis({reinterpret_cast<const uint8_t*>(once.data()), once.size()}, key, checks, &why);
  if (!again || serializeAnalysis(*again, key) != once) __builtin_trap();
  return 0;
}
