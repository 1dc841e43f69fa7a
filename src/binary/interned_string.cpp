#include "binary/interned_string.hpp"

#include <array>
#include <functional>
#include <mutex>
#include <unordered_set>

namespace goscope {

namespace {

struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Shards by hash, each under its own lock: the search's threads intern at
// the same time (a lock per string, seldom the same one).
class Pool {
 public:
  const std::string* intern(std::string_view s) {
    const size_t h = ViewHash{}(s);
    Shard& shard = shards_[h % shards_.size()];
    std::lock_guard lock(shard.mutex);
    auto it = shard.strings.find(s);
    if (it == shard.strings.end()) it = shard.strings.emplace(s).first;
    return &*it;  // a node of an unordered_set: its address never changes
  }

 private:
  struct Shard {
    std::mutex mutex;
    std::unordered_set<std::string, ViewHash, std::equal_to<>> strings;
  };
  std::array<Shard, 16> shards_;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: a value may be read during exit
  return *p;
}

const std::string* emptyString() {
  static const std::string* e = new std::string;
  return e;
}

}  // namespace

InternedString::InternedString() : s_(emptyString()) {}

InternedString::InternedString(std::string_view s) : s_(s.empty() ? emptyString() : pool().intern(s)) {}

}  // namespace goscope
