#include "binary/buildinfo.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "binary/pclntab_locate.hpp"

namespace goscope {
namespace {

constexpr std::string_view kMagic("\xff Go buildinf:", 14);
// cmd/go/internal/modload: infoStart / infoEnd frame runtime.modinfo.
constexpr std::string_view kInfoStart("\x30\x77\xaf\x0c\x92\x74\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6", 16);
constexpr std::string_view kInfoEnd("\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2", 16);

std::string_view asView(std::span<const uint8_t> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

uint64_t le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// binary.Uvarint-prefixed string (Go 1.18+ inline format).
std::optional<std::string> varintString(std::span<const uint8_t> b, size_t& pos) {
  uint64_t len = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (pos >= b.size() || shift > 63) return std::nullopt;
    uint8_t c = b[pos++];
    len |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) break;
  }
  if (len > b.size() - pos) return std::nullopt;
  std::string s(asView(b.subspan(pos, len)));
  pos += len;
  return s;
}

// A Go string variable: header {data pointer, length} at addr.
std::optional<std::string> goStringAt(const ElfFile& elf, uint64_t addr) {
  auto data = elf.readPointer(addr);
  auto lenBytes = elf.readVaddr(addr + 8, 8);
  if (!data || !lenBytes) return std::nullopt;
  uint64_t len = le64(lenBytes->data());
  if (len > (64u << 20)) return std::nullopt;
  auto s = elf.readVaddr(*data, len);
  if (!s) return std::nullopt;
  return std::string(asView(*s));
}

// "\xff Go buildinf:" at a 16-aligned address: .go.buildinfo, else scan the
// writable segments (where the linker puts the blob without that section).
std::optional<uint64_t> findBlob(const ElfFile& elf) {
  if (const auto* s = elf.section(".go.buildinfo"))
    if (asView(elf.sectionBytes(*s)).substr(0, kMagic.size()) == kMagic) return s->addr;
  for (const auto& p : elf.segments()) {
    if (p.type != PT_LOAD || (p.flags & PF_W) == 0) continue;
    // (of a truncated file, what it still holds)
    const std::span<const uint8_t> seg = pcln::segmentBytes(elf, p);
    if (seg.empty()) continue;
    std::string_view v = asView(seg);
    for (size_t i = v.find(kMagic); i != std::string_view::npos; i = v.find(kMagic, i + 1))
      if ((p.vaddr + i) % 16 == 0 && v.size() - i >= 32) return p.vaddr + i;
  }
  return std::nullopt;
}

// runtime.buildVersion's shape: go1.N[.N][rcN|betaN][ X:experiments].
bool looksLikeGoVersion(std::string_view s) {
  if (s.substr(0, 4) != "go1.") return false;
  size_t i = 4, digits = 0;
  auto number = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
    return i - start;
  };
  if ((digits = number()) == 0) return false;
  if (i < s.size() && s[i] == '.') {
    i++;
    if (number() == 0) return false;
  }
  for (std::string_view pre : {"rc", "beta"})
    if (s.substr(i, pre.size()) == pre) {
      i += pre.size();
      if (number() == 0) return false;
    }
  return i == s.size() || s.substr(i, 3) == " X:";
}

// Fallback without a blob: the one Go string header in writable data that
// points to a Go version string (runtime.buildVersion). Ambiguity fails.
std::optional<std::string> scanBuildVersion(const ElfFile& elf) {
  std::set<std::string> found;
  for (const auto& p : elf.segments()) {
    if (p.type != PT_LOAD || (p.flags & PF_W) == 0) continue;
    // (of a truncated file, what it still holds)
    const std::span<const uint8_t> seg = pcln::segmentBytes(elf, p);
    if (seg.empty()) continue;
    for (uint64_t off = (8 - p.vaddr % 8) % 8; off + 16 <= seg.size(); off += 8) {
      uint64_t len = le64(seg.data() + off + 8);
      if (len < 5 || len > 64) continue;
      auto ptr = elf.readPointer(p.vaddr + off);
      if (!ptr) continue;
      auto s = elf.readVaddr(*ptr, len);
      if (s && looksLikeGoVersion(asView(*s))) found.insert(std::string(asView(*s)));
    }
  }
  if (found.size() != 1) return std::nullopt;
  return *found.begin();
}

// modinfo is only valid with both sentinels (debug/buildinfo's check).
std::string stripSentinels(const std::string& mod) {
  if (mod.size() >= 33 && mod[mod.size() - 17] == '\n') return mod.substr(16, mod.size() - 32);
  return {};
}

// strconv.Unquote for the quoted keys and values of `build` lines.
std::optional<std::string> unquote(std::string_view q) {
  if (q.size() < 2 || q.front() != q.back()) return std::nullopt;
  if (q.front() == '`') return std::string(q.substr(1, q.size() - 2));
  if (q.front() != '"') return std::nullopt;
  std::string out;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  auto utf8 = [&](uint32_t cp) {
    if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x800) out += {static_cast<char>(0xc0 | cp >> 6), static_cast<char>(0x80 | (cp & 0x3f))};
    else if (cp < 0x10000)
      out += {static_cast<char>(0xe0 | cp >> 12), static_cast<char>(0x80 | ((cp >> 6) & 0x3f)),
              static_cast<char>(0x80 | (cp & 0x3f))};
    else
      out += {static_cast<char>(0xf0 | cp >> 18), static_cast<char>(0x80 | ((cp >> 12) & 0x3f)),
              static_cast<char>(0x80 | ((cp >> 6) & 0x3f)), static_cast<char>(0x80 | (cp & 0x3f))};
  };
  for (size_t i = 1; i + 1 < q.size(); i++) {
    if (q[i] != '\\') {
      out += q[i];
      continue;
    }
    if (i + 1 >= q.size() - 1) return std::nullopt;  // a backslash right before the closing quote
    char c = q[++i];
    switch (c) {
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case '\\': case '"': case '\'': out += c; break;
      case 'x': case 'u': case 'U': {
        size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (i + n >= q.size()) return std::nullopt;
        uint32_t v = 0;
        for (size_t k = 1; k <= n; k++) {
          int h = hex(q[i + k]);
          if (h < 0) return std::nullopt;
          v = v * 16 + static_cast<uint32_t>(h);
        }
        i += n;
        if (c == 'x') out += static_cast<char>(v);
        else utf8(v);
        break;
      }
      default:
        if (c >= '0' && c <= '7' && i + 2 < q.size()) {  // \NNN octal byte
          out += static_cast<char>(((c - '0') << 6) | ((q[i + 1] - '0') << 3) | (q[i + 2] - '0'));
          i += 2;
          break;
        }
        return std::nullopt;
    }
  }
  return out;
}

}  // namespace

void parseModinfo(std::string_view data, BuildInfo& info) {
  // Only newline-terminated lines count, as in ParseBuildInfo.
  for (size_t nl; (nl = data.find('\n')) != std::string_view::npos; data.remove_prefix(nl + 1)) {
    std::string_view line = data.substr(0, nl);
    auto field = [&](std::string_view prefix) -> std::optional<std::string_view> {
      if (line.substr(0, prefix.size()) != prefix) return std::nullopt;
      return line.substr(prefix.size());
    };
    if (auto path = field("path\t")) {
      info.path = std::string(*path);
    } else if (auto mod = field("mod\t")) {
      size_t tab = mod->find('\t');
      info.mainModule = std::string(mod->substr(0, tab));
      if (tab != std::string_view::npos) {
        std::string_view rest = mod->substr(tab + 1);
        info.mainVersion = std::string(rest.substr(0, rest.find('\t')));
      }
    } else if (auto kv = field("build\t")) {
      std::string key, value;
      std::string_view rawValue;
      if (!kv->empty() && (kv->front() == '"' || kv->front() == '`')) {
        // A quoted key ends at the first unescaped closing quote followed by '='.
        size_t end = 1;
        while (end < kv->size() && ((*kv)[end] != kv->front() || (kv->front() == '"' && (*kv)[end - 1] == '\\')))
          end++;
        auto k = unquote(kv->substr(0, end + 1));
        if (!k || end + 1 >= kv->size() || (*kv)[end + 1] != '=') continue;
        key = *k;
        rawValue = kv->substr(end + 2);
      } else {
        size_t eq = kv->find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        key = std::string(kv->substr(0, eq));
        rawValue = kv->substr(eq + 1);
      }
      if (!rawValue.empty() && (rawValue.front() == '"' || rawValue.front() == '`')) {
        auto v = unquote(rawValue);
        if (!v) continue;
        value = *v;
      } else {
        value = std::string(rawValue);
      }
      info.settings.emplace_back(std::move(key), std::move(value));
    }
  }
}

Result<BuildInfo> readBuildInfo(const ElfFile& elf) {
  BuildInfo info;
  std::string mod;
  if (auto blob = findBlob(elf)) {
    auto hdr = elf.readVaddr(*blob, 32);
    if (!hdr) return fail(ErrorKind::BadTarget, elf.path() + ": truncated Go build info");
    uint8_t ptrSize = (*hdr)[14], flags = (*hdr)[15];
    if (flags & 2) {
      // Inline strings right after the header; read what the segment holds.
      std::span<const uint8_t> rest;
      for (const auto& p : elf.segments())
        if (p.type == PT_LOAD && *blob >= p.vaddr && *blob < p.vaddr + p.filesz) {
          uint64_t len = p.vaddr + p.filesz - *blob - 32;
          // A truncated file (ElfFile::truncation): the strings need only
          // what it still holds of the segment.
          if (auto off = elf.vaddrToOffset(*blob + 32); off && *off < elf.bytes().size())
            len = std::min<uint64_t>(len, elf.bytes().size() - *off);
          rest = elf.readVaddr(*blob + 32, len).value_or(std::span<const uint8_t>{});
        }
      size_t pos = 0;
      auto vers = varintString(rest, pos);
      auto m = vers ? varintString(rest, pos) : std::nullopt;
      info.goVersion = vers.value_or("");
      mod = m.value_or("");
    } else {
      if (ptrSize != 8 || (flags & 1))
        return fail(ErrorKind::BadTarget, elf.path() + ": Go build info is not little-endian 64-bit");
      auto versAddr = elf.readPointer(*blob + 16);
      auto modAddr = elf.readPointer(*blob + 24);
      if (versAddr) info.goVersion = goStringAt(elf, *versAddr).value_or("");
      if (modAddr) mod = goStringAt(elf, *modAddr).value_or("");
    }
    info.source = "buildinfo";
  } else if (auto vers = scanBuildVersion(elf)) {
    info.goVersion = *vers;
    std::string_view all = asView(elf.bytes());
    if (size_t start = all.find(kInfoStart); start != std::string_view::npos)
      if (size_t end = all.find(kInfoEnd, start + kInfoStart.size()); end != std::string_view::npos)
        mod = std::string(all.substr(start, end + kInfoEnd.size() - start));
    info.source = "scan";
  }
  if (info.goVersion.empty())
    return fail(ErrorKind::BadTarget, elf.path() + ": no Go build info",
                "not a Go program, or its .go.buildinfo was removed");
  info.rawModinfo = stripSentinels(mod);
  parseModinfo(info.rawModinfo, info);
  return info;
}

}  // namespace goscope
