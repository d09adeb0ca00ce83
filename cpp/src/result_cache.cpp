#include "assoc/result_cache.hpp"

#include <algorithm>

#include "assoc/counters.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

std::uint64_t CacheKey::hash() const {
  std::uint64_t h = reinterpret_cast<std::uintptr_t>(owner) * 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  };
  mix(kind);
  mix(item);
  for (const std::uint32_t v : state) mix(v);
  return h ^ (h >> 29);
}

ResultCache& ResultCache::instance() {
  static ResultCache cache;
  return cache;
}

// By default the cache may use an eighth of physical memory, at most 1 GiB.
ResultCache::ResultCache() : limit_(std::min<std::uint64_t>(std::uint64_t{1} << 30, total_memory() / 8)) {}

std::shared_ptr<const void> ResultCache::find(const CacheKey& key) {
  const std::uint64_t h = key.hash();
  std::shared_ptr<const void> found;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [b, e] = index_.equal_range(h);
    for (auto it = b; it != e; ++it) {
      const Lru::iterator entry = it->second;
      if (!(entry->key == key)) continue;
      if (entry->owner.expired()) {
        erase(entry);
      } else {
        lru_.splice(lru_.begin(), lru_, entry);
        found = entry->value;
      }
      break;
    }
  }
  Counters::instance().cache_lookup(found != nullptr);
  return found;
}

void ResultCache::insert(CacheKey key, std::weak_ptr<const void> owner, std::shared_ptr<const void> value,
                         std::size_t bytes) {
  const std::uint64_t h = key.hash();
  bool replaced = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (limit_ == 0 || bytes > limit_) return;
    auto [b, e] = index_.equal_range(h);
    for (auto it = b; it != e; ++it) {
      if (it->second->key == key) {
        erase(it->second);
        replaced = true;
        break;
      }
    }
    lru_.push_front(Entry{std::move(key), h, std::move(owner), std::move(value), bytes});
    index_.emplace(h, lru_.begin());
    bytes_ += bytes;
    replaced = trim() > 0 || replaced;
  }
  Counters::instance().cache_add(static_cast<std::int64_t>(bytes), replaced);
}

void ResultCache::erase(Lru::iterator entry) {
  auto [b, e] = index_.equal_range(entry->hash);
  for (auto it = b; it != e; ++it) {
    if (it->second == entry) {
      index_.erase(it);
      break;
    }
  }
  bytes_ -= entry->bytes;
  lru_.erase(entry);
}

void ResultCache::sweep() {
  stores_since_sweep_ = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->owner.expired()) erase(it);
    it = next;
  }
}

std::size_t ResultCache::trim(bool force_sweep) {
  // Walking the whole list on every store made a store cost as much as the cache is long.
  // Entries of a dropped model are garbage until swept: sweeping once per as many stores as
  // there are entries keeps them at most about as many as the live ones.
  constexpr std::size_t kMinStoresPerSweep = 64;
  if (force_sweep || bytes_ > limit_ ||
      ++stores_since_sweep_ >= std::max(kMinStoresPerSweep, lru_.size())) {
    sweep();
  }
  std::size_t evicted = 0;
  while (bytes_ > limit_ && !lru_.empty()) {
    erase(std::prev(lru_.end()));
    ++evicted;
  }
  return evicted;
}

void ResultCache::set_limit(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
  trim(true);
}

CacheInfo ResultCache::info() {
  std::lock_guard<std::mutex> lock(mutex_);
  sweep();
  return CacheInfo{lru_.size(), bytes_, limit_};
}

void ResultCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

}  // namespace assoc
