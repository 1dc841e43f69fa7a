// The analysis cache's record and its file format, pure (fuzzed:
// tests/fuzz/fuzz_analysis_record.cpp): what start-up's two whole-code
// searches found in one binary, as bytes and back. A record read is checked
// whole against the binary it claims to describe (docs/analysis-cache.md).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "binary/call_sites.hpp"
#include "binary/inline_placement.hpp"
#include "binary/pclntab.hpp"

namespace goscope {

struct AnalysisRecord {
  std::unordered_map<uint64_t, CallSiteProof> callSites;  // by stepped entry
  // Every callee name the binary's inline tree holds (empty until a search
  // has listed them), the names whose bodies were searched, and the bodies
  // found for those, in the search's order (function table, then call).
  std::vector<std::string> inlinedNames;
  std::set<std::string, std::less<>> inlinedSearched;
  std::vector<InlinedSite> inlined;
};

// What a record is checked against when read: the function an address is
// in (nullptr: none) and the file's bytes at an address (nullopt: not in it).
struct AnalysisChecks {
  std::function<const GoFunction*(uint64_t)> functionAt;
  std::function<std::optional<std::span<const uint8_t>>(uint64_t, size_t)> bytesAt;
};

// The file format, pure: bytes <-> record (fuzzed: tests/fuzz/analysis_cache).
// A record is accepted whole or not at all; `why` says what was wrong.
std::string serializeAnalysis(const AnalysisRecord& r, std::span<const uint8_t, 16> key);
// The same bytes without a buffer of them all: `put` gets the payload in
// pieces of about 1 MiB; the header (whose checksum covers the payload)
// comes back at the end, to be put in front (a file: written at offset 0
// afterwards). serializeAnalysis is this into one string.
constexpr size_t kAnalysisHeaderSize = 44;
std::array<uint8_t, kAnalysisHeaderSize> streamAnalysis(const AnalysisRecord& r, std::span<const uint8_t, 16> key,
                                                        const std::function<void(std::string_view)>& put);
std::optional<AnalysisRecord> parseAnalysis(std::span<const uint8_t> bytes, std::span<const uint8_t, 16> key,
                                            const AnalysisChecks& checks, std::string* why = nullptr);

}  // namespace goscope
