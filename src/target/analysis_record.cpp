#include "target/analysis_record.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>


namespace goscope {

namespace {

// Layout (little-endian; docs/analysis-cache.md):
//   magic "GSANLYS\n", u32 version, 16-byte key (XXH3-128 of the binary's
//   file), u64 payload length, u64 XXH3-64 of the payload, payload.
//   payload: u32 n, n x {u32 length, bytes} (the string table)
//            u32 n, n x {u64 entry, u32 k, k x u64 site, u8 refused, [str]}
//            u32 n, n x str (every callee name)
//            u32 n, n x str (names searched)
//            u32 n, n x {str callee, u64 caller entry, u32 call index,
//                        str file, i32 line, u32 k, k x u64 probe, str reason,
//                        u8 frameless}
//   str: u32 index into the string table.
constexpr char kMagic[8] = {'G', 'S', 'A', 'N', 'L', 'Y', 'S', '\n'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 8 + 4 + 16 + 8 + 8;
constexpr uint32_t kMaxString = 64 * 1024;
// A binary's own tables bound its counts; these only stop a hostile file
// from asking for absurd allocations before the checks run.
constexpr uint32_t kMaxCount = 1u << 24;


class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  // A string is its index in the record's string table: a reason, a file
  // name or a callee repeats thousands of times in a big binary.
  // The string must outlive this writer (the record's own are kept by view:
  // no copy of each of ~500,000 strings to look it up).
  void str(std::string_view s) {
    s = s.substr(0, kMaxString);
    auto [it, fresh] = index_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (fresh) strings_.push_back(s);
    u32(it->second);
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& bytes() { return out_; }
  // The string table, then what was written, appended to `to`.
  void appendWithStrings(Writer& to) const {
    to.u32(static_cast<uint32_t>(strings_.size()));
    for (std::string_view s : strings_) {
      to.u32(static_cast<uint32_t>(s.size()));
      to.out_.append(s);
    }
    to.out_ += out_;
  }
  size_t sizeWithStrings() const {
    size_t n = 4 + out_.size();
    for (std::string_view s : strings_) n += 4 + s.size();
    return n;
  }

 private:
  std::string out_;
  std::unordered_map<std::string_view, uint32_t> index_;
  std::vector<std::string_view> strings_;
};

// Every read checks what is left; the first failure sticks.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  bool ok() const { return ok_; }
  bool atEnd() const { return pos_ == b_.size(); }
  uint8_t u8() { uint8_t v = 0; raw(&v, 1); return v; }
  uint32_t u32() { uint32_t v = 0; raw(&v, 4); return v; }
  int32_t i32() { int32_t v = 0; raw(&v, 4); return v; }
  uint64_t u64() { uint64_t v = 0; raw(&v, 8); return v; }
  uint32_t count(size_t minBytesEach) {
    uint32_t n = u32();
    if (n > kMaxCount || static_cast<uint64_t>(n) * minBytesEach > b_.size() - pos_) ok_ = false;
    return ok_ ? n : 0;
  }
  // The table first (readStrings), then each string by its index.
  void readStrings() {
    const uint32_t n = count(4);
    strings_.reserve(n);
    for (uint32_t i = 0; i < n && ok_; i++) {
      const uint32_t len = u32();
      if (!ok_ || len > kMaxString || len > b_.size() - pos_) {
        ok_ = false;
        return;
      }
      strings_.emplace_back(reinterpret_cast<const char*>(b_.data() + pos_), len);  // a view of the bytes read
      pos_ += len;
    }
  }
  std::string str() { return std::string(stringAt(strIndex())); }
  // The index of the next string in the table (0 after a failure).
  uint32_t strIndex() {
    const uint32_t i = u32();
    if (!ok_ || i >= strings_.size()) {
      ok_ = false;
      return 0;
    }
    return i;
  }
  size_t stringCount() const { return strings_.size(); }
  std::string_view stringAt(uint32_t i) const { return i < strings_.size() ? strings_[i] : std::string_view(); }
  // The table's string i interned, once per index, not once per body that
  // names it (a warm run reads ~300,000 of them for buf).
  InternedString internedAt(uint32_t i) {
    if (i >= strings_.size()) return {};
    if (interned_.size() != strings_.size()) interned_.resize(strings_.size());
    if (!interned_[i]) interned_[i] = InternedString(strings_[i]);
    return *interned_[i];
  }
  InternedString internedStr() { return internedAt(strIndex()); }
  void raw(void* p, size_t n) {
    if (!ok_ || n > b_.size() - pos_) {
      ok_ = false;
      return;
    }
    std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::vector<std::string_view> strings_;  // into b_
  std::vector<std::optional<InternedString>> interned_;
};

std::optional<AnalysisRecord> refuse(std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return std::nullopt;
}

// A call site is a `call rel32` (e8) inside a function whose target is the
// entry: checked on the file's bytes, so a cached site is one the search
// would have found.
bool isCallTo(const AnalysisChecks& c, uint64_t site, uint64_t entry) {
  const GoFunction* f = c.functionAt(site);
  if (!f || site + 5 > f->end) return false;
  auto b = c.bytesAt(site, 5);
  if (!b || b->size() != 5 || (*b)[0] != 0xe8) return false;
  int32_t rel = 0;
  std::memcpy(&rel, b->data() + 1, 4);
  return site + 5 + static_cast<uint64_t>(static_cast<int64_t>(rel)) == entry;
}

}  // namespace

std::string serializeAnalysis(const AnalysisRecord& r, std::span<const uint8_t, 16> key) {
  Writer p;
  p.bytes().reserve(r.callSites.size() * 32 + r.inlined.size() * 48);  // about what it takes: no doubling
  std::vector<uint64_t> entries;
  for (const auto& [e, _] : r.callSites) entries.push_back(e);
  std::sort(entries.begin(), entries.end());  // the same record, the same bytes
  p.u32(static_cast<uint32_t>(entries.size()));
  for (uint64_t e : entries) {
    const CallSiteProof& proof = r.callSites.at(e);
    p.u64(e);
    p.u32(static_cast<uint32_t>(proof.sites.size()));
    for (uint64_t s : proof.sites) p.u64(s);
    p.u8(proof.refused ? 1 : 0);
    if (proof.refused) p.str(*proof.refused);
  }
  p.u32(static_cast<uint32_t>(r.inlinedNames.size()));
  for (const auto& n : r.inlinedNames) p.str(n);
  p.u32(static_cast<uint32_t>(r.inlinedSearched.size()));
  for (const auto& n : r.inlinedSearched) p.str(n);
  p.u32(static_cast<uint32_t>(r.inlined.size()));
  for (const InlinedSite& s : r.inlined) {
    p.str(s.callee);
    p.u64(s.caller ? s.caller->entry : 0);
    p.u32(s.callIndex);
    p.str(s.callFile);
    p.i32(s.callLine);
    p.u32(static_cast<uint32_t>(s.probes.size()));
    for (uint64_t a : s.probes) p.u64(a);
    p.str(s.reason);
    p.u8(s.callerFrameless ? 1 : 0);
  }
  // Assembled in one buffer of the final size (kubectl's record is 8 MB: no
  // copies of the payload beside it; peak RSS, issue #14), the checksum
  // written into its place afterwards.
  Writer out;
  const size_t payloadSize = p.sizeWithStrings();
  out.bytes().reserve(kHeader + payloadSize);
  out.raw(kMagic, sizeof kMagic);
  out.u32(kVersion);
  out.raw(key.data(), key.size());
  out.u64(payloadSize);
  const size_t hashAt = out.bytes().size();
  out.u64(0);
  p.appendWithStrings(out);
  std::string& bytes = out.bytes();
  const uint64_t hash = XXH3_64bits(bytes.data() + kHeader, bytes.size() - kHeader);
  std::memcpy(bytes.data() + hashAt, &hash, sizeof hash);
  return std::move(bytes);
}

std::optional<AnalysisRecord> parseAnalysis(std::span<const uint8_t> bytes, std::span<const uint8_t, 16> key,
                                            const AnalysisChecks& checks, std::string* why) {
  if (bytes.size() < kHeader) return refuse(why, "shorter than its header");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return refuse(why, "not an analysis cache file");
  Reader h(bytes.subspan(8, kHeader - 8));
  if (h.u32() != kVersion) return refuse(why, "another version of the format");
  uint8_t fileKey[16];
  h.raw(fileKey, sizeof fileKey);
  if (std::memcmp(fileKey, key.data(), 16) != 0) return refuse(why, "made for another binary");
  const uint64_t length = h.u64(), hash = h.u64();
  if (!h.ok() || length != bytes.size() - kHeader) return refuse(why, "truncated or extended");
  const auto payload = bytes.subspan(kHeader);
  if (XXH3_64bits(payload.data(), payload.size()) != hash) return refuse(why, "its checksum does not match (damaged)");

  AnalysisRecord r;
  Reader p(payload);
  p.readStrings();
  const uint32_t nEntries = p.count(4 + 4 + 1);
  for (uint32_t i = 0; i < nEntries && p.ok(); i++) {
    const uint64_t entry = p.u64();
    const GoFunction* f = checks.functionAt(entry);
    if (!f || f->entry != entry) return refuse(why, "a call-site entry is no function's entry");
    CallSiteProof proof;
    const uint32_t k = p.count(8);
    for (uint32_t j = 0; j < k && p.ok(); j++) {
      const uint64_t site = p.u64();
      if (p.ok() && !isCallTo(checks, site, entry)) return refuse(why, "a call site is not a call of its entry");
      if (!proof.sites.empty() && site <= proof.sites.back()) return refuse(why, "call sites out of order");
      proof.sites.push_back(site);
    }
    if (p.u8() != 0) proof.refused = p.str();
    if (!r.callSites.emplace(entry, std::move(proof)).second) return refuse(why, "an entry twice");
  }
  const uint32_t nNames = p.count(4);
  r.inlinedNames.reserve(nNames);
  for (uint32_t i = 0; i < nNames && p.ok(); i++) r.inlinedNames.push_back(p.str());
  if (!std::is_sorted(r.inlinedNames.begin(), r.inlinedNames.end()) ||
      std::adjacent_find(r.inlinedNames.begin(), r.inlinedNames.end()) != r.inlinedNames.end())
    return refuse(why, "callee names not sorted");
  // Searched names by their string-table index: each body's name is then
  // checked without comparing strings (43,000 bodies in Go's compiler).
  std::vector<bool> searchedIndex(p.stringCount(), false);
  const uint32_t nSearched = p.count(4);
  for (uint32_t i = 0; i < nSearched && p.ok(); i++) {
    const uint32_t at = p.strIndex();
    if (!p.ok()) break;
    const std::string_view n = p.stringAt(at);
    if (!std::binary_search(r.inlinedNames.begin(), r.inlinedNames.end(), n))
      return refuse(why, "a searched name the binary does not inline");
    searchedIndex[at] = true;
    r.inlinedSearched.emplace(n);
  }
  const uint32_t nSites = p.count(4 + 8 + 4 + 4 + 4 + 4 + 4 + 1);
  r.inlined.reserve(nSites);
  for (uint32_t i = 0; i < nSites && p.ok(); i++) {
    InlinedSite s;
    const uint32_t calleeAt = p.strIndex();
    s.callee = p.internedAt(calleeAt);
    const uint64_t callerEntry = p.u64();
    s.callIndex = p.u32();
    s.callFile = p.internedStr();
    s.callLine = p.i32();
    if (!p.ok()) break;
    s.caller = checks.functionAt(callerEntry);
    if (!s.caller || s.caller->entry != callerEntry) return refuse(why, "an inlined body's caller is no function");
    if (!searchedIndex[calleeAt]) return refuse(why, "an inlined body of a name not searched");
    const uint32_t k = p.count(8);
    for (uint32_t j = 0; j < k && p.ok(); j++) {
      const uint64_t a = p.u64();
      if (p.ok() && (a <= s.caller->entry || a >= s.caller->end))
        return refuse(why, "an inlined body's probe is outside its caller");
      s.probes.push_back(a);
    }
    s.reason = p.internedStr();
    s.callerFrameless = p.u8() != 0;
    if (!r.inlined.empty()) {
      const InlinedSite& prev = r.inlined.back();
      if (std::pair(prev.caller->entry, prev.callIndex) >= std::pair(s.caller->entry, s.callIndex))
        return refuse(why, "inlined bodies out of order");
    }
    r.inlined.push_back(std::move(s));
  }
  if (!p.ok() || !p.atEnd()) return refuse(why, "its records do not fill it exactly");
  return r;
}

}  // namespace goscope
