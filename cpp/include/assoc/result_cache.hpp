#pragma once
// The engine's result cache: states computed for one selection state of one model, shared by
// every session that reaches the same state, evicted least recently used past a byte limit.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace assoc {

struct CacheKey {
  const void* owner = nullptr;       // the object whose results these are (one model)
  std::uint32_t kind = 0;            // what is cached: one owner's own numbering
  std::uint32_t item = 0;            // e.g. a field
  std::vector<std::uint32_t> state;  // the canonical selection state

  bool operator==(const CacheKey&) const = default;
  std::uint64_t hash() const;
};

struct CacheInfo {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::size_t limit = 0;
};

class ResultCache {
 public:
  // The one cache of this process.
  static ResultCache& instance();

  // The cached value for `key`, or null. Counts a lookup, and a hit when found. An entry whose
  // owner is gone is dropped and not found.
  std::shared_ptr<const void> find(const CacheKey& key);
  // Caches `value`, which holds `bytes` bytes of results, while `owner` lives. Counts an add,
  // and a replacement when it replaces an entry with the same key or evicts older ones.
  void insert(CacheKey key, std::weak_ptr<const void> owner, std::shared_ptr<const void> value,
              std::size_t bytes);

  // Bytes of results the cache may hold (0 turns caching off).
  void set_limit(std::size_t bytes);
  CacheInfo info();  // entries of models that are gone are dropped first
  void clear();

 private:
  ResultCache();
  struct Entry {
    CacheKey key;
    std::uint64_t hash;
    std::weak_ptr<const void> owner;
    std::shared_ptr<const void> value;
    std::size_t bytes;
  };
  using Lru = std::list<Entry>;  // most recently used first
  void erase(Lru::iterator it);
  // Drops the entries whose owner (model) is gone.
  void sweep();
  // Sweeps (on every call past the limit or with `sweep`, else once per as many stores as
  // there are entries, so that a store costs O(1) amortized), then drops the least recently
  // used entries past the limit; returns how many live entries it evicted.
  std::size_t trim(bool force_sweep = false);

  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_multimap<std::uint64_t, Lru::iterator> index_;
  std::size_t bytes_ = 0;
  std::size_t limit_ = 0;
  std::size_t stores_since_sweep_ = 0;
};

}  // namespace assoc
