#include "assoc/counters.hpp"

namespace assoc {

Counters& Counters::instance() {
  static Counters counters;
  return counters;
}

void Counters::session_opened(const std::string& user) {
  std::lock_guard<std::mutex> lock(users_mutex_);
  ++sessions_active_;
  ++sessions_total_;
  ++open_sessions_by_user_[user];
  users_seen_[user] = true;
}

void Counters::session_closed(const std::string& user) {
  std::lock_guard<std::mutex> lock(users_mutex_);
  --sessions_active_;
  auto it = open_sessions_by_user_.find(user);
  if (it != open_sessions_by_user_.end() && --it->second <= 0) open_sessions_by_user_.erase(it);
}

CounterSnapshot Counters::snapshot() const {
  CounterSnapshot s;
  s.selections = selections_.load();
  s.cache_hits = cache_hits_.load();
  s.cache_lookups = cache_lookups_.load();
  s.cache_added = cache_added_.load();
  s.cache_replaced = cache_replaced_.load();
  s.cache_bytes_added = cache_bytes_added_.load();
  std::lock_guard<std::mutex> lock(users_mutex_);
  s.sessions_active = sessions_active_;
  s.sessions_total = sessions_total_;
  s.users_active = static_cast<std::int64_t>(open_sessions_by_user_.size());
  s.users_total = static_cast<std::int64_t>(users_seen_.size());
  return s;
}

}  // namespace assoc
