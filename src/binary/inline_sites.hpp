// Inlined calls as probe locations: where in its caller's code each inlined
// body of a function starts, chosen so that one hit is one call
// (docs/go-runtime.md, "Inlined calls"). pclntab records every inlined body
// (the inline tree and the pc -> inline index table, Pclntab::inlinedCalls);
// the caller's code, decoded into a control-flow graph, says which body
// instruction every execution of the call passes exactly once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "binary/call_sites.hpp"
#include "binary/go_binary.hpp"
#include "binary/inline_placement.hpp"

namespace goscope {

// Every inlined call, in the whole binary, whose callee's name `wanted`
// accepts, in function-table order. Only the callers that hold one are
// decoded (the whole function: the graph needs every branch).
// progress(done, total) is called every few hundred functions; returning
// false stops the search (a Ctrl-C while a big binary is read): what was
// found so far is returned.
// names, when given and the search ran to its end: every callee name of the
// binary's inline tree, and those `wanted` accepted (for the analysis cache).
struct InlinedNames {
  bool complete = false;  // the search ran to its end (progress never said stop)
  std::vector<std::string> all, searched;
};
std::vector<InlinedSite> findInlinedSites(const GoBinary& bin, const std::function<bool(std::string_view)>& wanted,
                                          const std::function<bool(size_t, size_t)>& progress = {},
                                          InlinedNames* names = nullptr);

// The same search, fed function by function: searchAlone(i) decodes function
// i itself; user() lets the call-site search (call_sites.hpp) decode each
// function once for both. take() when every function has been seen (names
// is complete only then), in the function table's order. Each i from one
// thread at a time; different i from any threads.
class InlinedSiteSearch {
 public:
  InlinedSiteSearch(const GoBinary& bin, std::function<bool(std::string_view)> wanted);
  void searchAlone(size_t i);
  WholeCodeUser user();
  std::vector<InlinedSite> take(InlinedNames* names);

 private:
  bool wanted(std::string_view name);
  bool wantsCode(size_t i);
  void withCode(size_t i, const Result<FunctionCode>& code, std::optional<std::span<const uint8_t>> bytes);

  struct Pending {  // a caller's calls, between wantsCode and withCode
    std::vector<InlinedCall> calls;
    std::vector<bool> want;
  };
  // Callee names by view, without a string made per lookup.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const GoBinary& bin_;
  std::function<bool(std::string_view)> wanted_;
  // One pointer a function, not a Pending (64 bytes) for each of 58,519
  // functions: only those with wanted calls have one, between the two calls.
  std::vector<std::unique_ptr<Pending>> pending_;
  std::vector<std::vector<InlinedSite>> perCaller_;
  std::vector<char> seen_;  // not vector<bool>: set from several threads
  std::mutex namesMutex_;
  std::unordered_map<std::string, bool, NameHash, std::equal_to<>> names_;
};

// The inlined calls of one caller (all of them when wanted is empty).
std::vector<InlinedSite> inlinedSitesIn(const GoBinary& bin, const GoFunction& caller,
                                        const std::function<bool(std::string_view)>& wanted = {});

}  // namespace goscope
