#pragma once
// Numbers of a narrow range found by their value, without hashing (the CSV reader's columns).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "assoc/big_blocks.hpp"
#include "assoc/number_text.hpp"

namespace assoc::detail {

// Numbers of a narrow range as a direct table: a number that is exactly k / 10^scale for an
// integer k is found at slots[k - lo] without hashing. Typical id, count, year and price columns
// stay in it; a column whose numbers spread too thin leaves it for the NumberMap, for good.
// A number is in one of the two, never both: once the NumberMap holds a number the scale is
// fixed, and the table's range only grows, so a number's place never changes.
class DenseNumbers {
 public:
  static constexpr std::int64_t kPow10Int[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  // kMaxKey / kPow10Int[i], so that the hot path does not divide.
  static constexpr std::int64_t kMaxKeyOver[] = {1000000000000000LL, 100000000000000LL, 10000000000000LL,
                                                 1000000000000LL,    100000000000LL,    10000000000LL,
                                                 1000000000LL};
  static constexpr unsigned kMaxScale = 6;
  // Keys stay within ±10^15, where distinct keys are distinct doubles.
  static constexpr std::int64_t kMaxKey = 1000000000000000LL;

  // Sizes the table's allowance to the rows the chunk is expected to hold.
  void expect_rows(std::size_t rows) {
    allowance_ = std::max<std::int64_t>(std::int64_t{1} << 16, 2 * static_cast<std::int64_t>(rows));
  }
  bool active() const { return active_; }
  unsigned scale() const { return scale_; }
  bool empty() const { return slots_.empty(); }
  std::int64_t min_key() const { return min_key_; }
  std::int64_t max_key() const { return max_key_; }
  // Calls f(key, symbol index) for every number in the table, in key order.
  template <class F>
  void for_each(F f) const {
    if (slots_.empty()) return;
    const std::uint32_t* s = slots_.data() + (min_key_ - lo_);
    for (std::int64_t key = min_key_; key <= max_key_; ++key, ++s)
      if (*s != 0) f(key, *s - 1);
  }

  // The slots of keys min_key() .. max_key(): symbol index + 1, 0 where the key is absent.
  const std::uint32_t* key_slots() const { return slots_.data() + (min_key_ - lo_); }

  // The key of a number at the current scale; false when it has none. Sets the scale from the
  // first number.
  bool key_of(const NumberText& t, std::int64_t& k) {
    if (!has_scale_) {
      scale_ = t.fixed ? std::min(t.frac, kMaxScale) : 0;
      has_scale_ = true;
    }
    if (t.fixed) return fixed_key(t, k);
    const double x = t.value * kPow10[scale_];
    if (!(x >= -static_cast<double>(kMaxKey) && x <= static_cast<double>(kMaxKey))) return false;
    k = static_cast<std::int64_t>(std::nearbyint(x));
    return static_cast<double>(k) / kPow10[scale_] == t.value;
  }

  // The key of a fixed number at the current scale, once the scale is set; false when it has none.
  bool fixed_key(const NumberText& t, std::int64_t& k) const {
    std::int64_t m = t.mantissa;
    unsigned frac = t.frac;
    while (frac > scale_ && m % 10 == 0) {
      m /= 10;
      --frac;
    }
    if (frac > scale_) return false;
    if (m > kMaxKeyOver[scale_ - frac] || m < -kMaxKeyOver[scale_ - frac]) return false;
    k = m * kPow10Int[scale_ - frac];
    return true;
  }
  bool has_scale() const { return has_scale_; }

  // Starts loading the slot of a key that is likely to be looked up soon. Inlined early on
  // purpose: as a call, a function whose only effect is a prefetch counts as pure and is dropped.
  [[gnu::always_inline]] void prefetch(std::int64_t k) const {
    if (k >= lo_ && k - lo_ < static_cast<std::int64_t>(slots_.size()))
      __builtin_prefetch(slots_.data() + (k - lo_));
  }

  // The slot of key k, growing the table to reach it; null when that would spread it too thin
  // (the caller then moves the table into the NumberMap).
  [[gnu::always_inline]] std::uint32_t* slot(std::int64_t k, std::size_t n_symbols) {
    if (k >= lo_ && k - lo_ < static_cast<std::int64_t>(slots_.size())) {
      min_key_ = std::min(min_key_, k);
      max_key_ = std::max(max_key_, k);
      return &slots_[static_cast<std::size_t>(k - lo_)];
    }
    return grow(k, n_symbols) ? &slots_[static_cast<std::size_t>(k - lo_)] : nullptr;
  }

  // Raises the scale (no number may be in the NumberMap yet); false when the table would spread
  // too thin.
  bool rescale(unsigned scale, std::size_t n_symbols) {
    const std::int64_t mul = kPow10Int[scale - scale_];
    if (!slots_.empty()) {
      const std::int64_t span = max_key_ - min_key_;
      if (span > (max_slots(n_symbols) - 1) / mul || min_key_ < -kMaxKey / mul || max_key_ > kMaxKey / mul)
        return false;
      ZeroedArray<std::uint32_t> fresh(static_cast<std::size_t>(span * mul + 1), ZeroedArray<std::uint32_t>::Sparse{});
      for (std::int64_t key = min_key_; key <= max_key_; ++key)
        fresh[static_cast<std::size_t>((key - min_key_) * mul)] = slots_[static_cast<std::size_t>(key - lo_)];
      std::swap(slots_, fresh);
      min_key_ *= mul;
      max_key_ *= mul;
      lo_ = min_key_;
    }
    scale_ = scale;
    return true;
  }

  // Leaves direct addressing: calls add(slot value) for every filled slot and frees the table.
  template <class Add>
  void deactivate(Add add) {
    for (const std::uint32_t s : slots_)
      if (s != 0) add(s - 1);
    slots_ = ZeroedArray<std::uint32_t>();
    active_ = false;
  }

 private:
  // A table may hold twice as many slots as the chunk is expected to have rows (at least
  // 2^16), or 8 slots a symbol: a narrow column of a big chunk fills its table in time.
  std::int64_t max_slots(std::size_t n_symbols) const {
    return std::max(allowance_, 8 * static_cast<std::int64_t>(n_symbols + 1));
  }

  bool grow(std::int64_t k, std::size_t n_symbols) {
    const auto cap = static_cast<std::int64_t>(slots_.size());
    if (cap == 0) {
      // A big chunk's table takes its whole allowance at once, a quarter of it below the
      // first key: pages are zeroed only where keys land, and rising or falling keys (ids,
      // dates) fill it without regrowing and copying it.
      const std::int64_t first_cap = allowance_ > (std::int64_t{1} << 16) ? allowance_ : 1024;
      lo_ = first_cap > 1024 ? k - first_cap / 4 : k - 16;
      min_key_ = max_key_ = k;
      slots_ = ZeroedArray<std::uint32_t>(static_cast<std::size_t>(first_cap), ZeroedArray<std::uint32_t>::Sparse{});
      return true;
    }
    // The keys seen, not the slack around them, count against the limit.
    const std::int64_t lo_key = std::min(min_key_, k), hi_key = std::max(max_key_, k);
    const std::int64_t need = hi_key - lo_key + 1;
    if (need > max_slots(n_symbols)) return false;
    const std::int64_t fresh_cap = std::min(std::max(need, 2 * cap), max_slots(n_symbols));
    const std::int64_t fresh_lo = k < min_key_ ? hi_key + 1 - fresh_cap : lo_key;
    ZeroedArray<std::uint32_t> fresh(static_cast<std::size_t>(fresh_cap), ZeroedArray<std::uint32_t>::Sparse{});
    std::memcpy(fresh.data() + (min_key_ - fresh_lo), slots_.data() + (min_key_ - lo_),
                static_cast<std::size_t>(max_key_ - min_key_ + 1) * sizeof(std::uint32_t));
    std::swap(slots_, fresh);
    lo_ = fresh_lo;
    min_key_ = lo_key;
    max_key_ = hi_key;
    return true;
  }

  ZeroedArray<std::uint32_t> slots_;  // symbol index + 1 by key - lo_; 0 = empty
  std::int64_t lo_ = 0;
  std::int64_t min_key_ = 0, max_key_ = 0;  // the keys seen
  std::int64_t allowance_ = std::int64_t{1} << 16;
  unsigned scale_ = 0;
  bool has_scale_ = false;
  bool active_ = true;
};

}  // namespace assoc::detail
