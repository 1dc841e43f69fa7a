#include "binary/analysis_record.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
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


// The payload is written in two passes over the record (streamAnalysis):
// the first numbers the strings (the table comes first in the file) and
// counts the bytes, the second writes them in pieces. No buffer of the
// whole record is held (buf's is 8.9 MB, and the two buffers it was built
// in were the peak RSS of a cold start).
//
// A string is its index in the record's string table: a reason, a file
// name or a callee repeats thousands of times in a big binary.

// Pass one: each string's index, in the order strings are met, and the
// body's size. The strings must outlive it (the record's own are kept by
// view: no copy of each of ~500,000 strings to look it up).
class StringNumbering {
 public:
  void u8(uint8_t) { size_ += 1; }
  void u32(uint32_t) { size_ += 4; }
  void i32(int32_t) { size_ += 4; }
  void u64(uint64_t) { size_ += 8; }
  void str(std::string_view s) {
    s = s.substr(0, kMaxString);
    auto [it, fresh] = index_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (fresh) strings_.push_back(s);
    order_.push_back(it->second);
    size_ += 4;
  }
  // An interned string is looked up by its address first: the same text is
  // the same address, and most of a record's strings are the bodies' own.
  void str(const InternedString& s) {
    auto [it, fresh] = byAddress_.try_emplace(s.data(), 0);
    if (fresh) {
      str(s.view());
      it->second = order_.back();
    } else {
      order_.push_back(it->second);
      size_ += 4;
    }
  }
  size_t payloadSize() const {
    size_t n = 4 + size_;
    for (std::string_view s : strings_) n += 4 + s.size();
    return n;
  }
  const std::vector<std::string_view>& strings() const { return strings_; }
  const std::vector<uint32_t>& order() const { return order_; }

 private:
  size_t size_ = 0;
  std::unordered_map<std::string_view, uint32_t> index_;
  std::unordered_map<const char*, uint32_t> byAddress_;
  std::vector<std::string_view> strings_;
  std::vector<uint32_t> order_;  // the index of every string written, in order
};

// Pass two: the bytes, handed to `put` in pieces of about kPiece, hashed on
// the way.
class PayloadWriter {
 public:
  PayloadWriter(const std::vector<uint32_t>& order, const std::function<void(std::string_view)>& put)
      : order_(order), put_(put) {
    XXH3_64bits_reset(hash_);
    buf_.reserve(kPiece + kMaxString + 8);
  }
  ~PayloadWriter() { XXH3_freeState(hash_); }
  PayloadWriter(const PayloadWriter&) = delete;
  void u8(uint8_t v) { raw(&v, 1); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(std::string_view) { u32(order_[next_++]); }
  void raw(const void* p, size_t n) {
    buf_.append(static_cast<const char*>(p), n);
    if (buf_.size() >= kPiece) flush();
  }
  void flush() {
    if (buf_.empty()) return;
    XXH3_64bits_update(hash_, buf_.data(), buf_.size());
    put_(buf_);
    buf_.clear();
  }
  uint64_t hash() const { return XXH3_64bits_digest(hash_); }

 private:
  static constexpr size_t kPiece = 1 << 20;
  const std::vector<uint32_t>& order_;
  size_t next_ = 0;
  const std::function<void(std::string_view)>& put_;
  std::string buf_;
  XXH3_state_t* hash_ = XXH3_createState();
};

// The body after the string table, the same for both passes.
template <class Out>
void writeBody(const AnalysisRecord& r, const std::vector<uint64_t>& entries, Out& p) {
  p.u32(static_cast<uint32_t>(entries.size()));
  for (uint64_t e : entries) {
    const CallSiteProof& proof = r.callSites.at(e);
    p.u64(e);
    p.u32(static_cast<uint32_t>(proof.sites.size()));
    for (uint64_t s : proof.sites) p.u64(s);
    p.u8(proof.refused ? 1 : 0);
    if (proof.refused) p.str(std::string_view(*proof.refused));
  }
  p.u32(static_cast<uint32_t>(r.inlinedNames.size()));
  for (const auto& n : r.inlinedNames) p.str(std::string_view(n));
  p.u32(static_cast<uint32_t>(r.inlinedSearched.size()));
  for (const auto& n : r.inlinedSearched) p.str(std::string_view(n));
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
}

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

std::array<uint8_t, kAnalysisHeaderSize> streamAnalysis(const AnalysisRecord& r, std::span<const uint8_t, 16> key,
                                                        const std::function<void(std::string_view)>& put) {
  std::vector<uint64_t> entries;
  entries.reserve(r.callSites.size());
  for (const auto& [e, _] : r.callSites) entries.push_back(e);
  std::sort(entries.begin(), entries.end());  // the same record, the same bytes
  StringNumbering numbering;
  writeBody(r, entries, numbering);
  PayloadWriter p(numbering.order(), put);
  p.u32(static_cast<uint32_t>(numbering.strings().size()));
  for (std::string_view s : numbering.strings()) {
    p.u32(static_cast<uint32_t>(s.size()));
    p.raw(s.data(), s.size());
  }
  writeBody(r, entries, p);
  p.flush();
  std::array<uint8_t, kAnalysisHeaderSize> h{};
  const uint64_t payloadSize = numbering.payloadSize(), hash = p.hash();
  static_assert(kHeader == kAnalysisHeaderSize);
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  std::memcpy(h.data() + 8, &kVersion, 4);
  std::memcpy(h.data() + 12, key.data(), key.size());
  std::memcpy(h.data() + 28, &payloadSize, 8);
  std::memcpy(h.data() + 36, &hash, 8);
  return h;
}

std::string serializeAnalysis(const AnalysisRecord& r, std::span<const uint8_t, 16> key) {
  std::string out(kAnalysisHeaderSize, '\0');
  const auto header = streamAnalysis(r, key, [&](std::string_view piece) { out.append(piece); });
  std::memcpy(out.data(), header.data(), header.size());
  return out;
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
    // Bodies come in their callers' order, many to a caller: the last
    // one's caller is checked first, before a search of the function
    // table (97,891 bodies in buf's record: start-up).
    s.caller = !r.inlined.empty() && r.inlined.back().caller->entry == callerEntry ? r.inlined.back().caller
                                                                                   : checks.functionAt(callerEntry);
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
