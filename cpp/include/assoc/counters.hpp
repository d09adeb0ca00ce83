#pragma once
// Engine-wide counters the healthcheck reports: they count real events as they happen.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace assoc {

struct CounterSnapshot {
  std::int64_t selections = 0;
  std::int64_t cache_hits = 0, cache_lookups = 0, cache_added = 0, cache_replaced = 0, cache_bytes_added = 0;
  std::int64_t sessions_active = 0, sessions_total = 0;
  std::int64_t users_active = 0, users_total = 0;
};

class Counters {
 public:
  // The one instance of this process.
  static Counters& instance();

  void selection() { selections_.fetch_add(1, std::memory_order_relaxed); }
  void cache_lookup(bool hit) {
    cache_lookups_.fetch_add(1, std::memory_order_relaxed);
    if (hit) cache_hits_.fetch_add(1, std::memory_order_relaxed);
  }
  void cache_add(std::int64_t bytes, bool replaced) {
    cache_added_.fetch_add(1, std::memory_order_relaxed);
    cache_bytes_added_.fetch_add(bytes, std::memory_order_relaxed);
    if (replaced) cache_replaced_.fetch_add(1, std::memory_order_relaxed);
  }
  // A session opens for a user (an empty user counts as one anonymous user).
  void session_opened(const std::string& user);
  void session_closed(const std::string& user);

  CounterSnapshot snapshot() const;

 private:
  std::atomic<std::int64_t> selections_{0};
  std::atomic<std::int64_t> cache_hits_{0}, cache_lookups_{0}, cache_added_{0}, cache_replaced_{0},
      cache_bytes_added_{0};
  mutable std::mutex users_mutex_;
  std::map<std::string, std::int64_t> open_sessions_by_user_;
  std::map<std::string, bool> users_seen_;
  std::int64_t sessions_active_ = 0, sessions_total_ = 0;
};

}  // namespace assoc
