#pragma once
// Proofs that a QVD field's numbers are distinct: keys set while their symbols are parsed
// (NumberKeys), and the check of the symbols a parse did not prove (symbols_may_repeat).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "assoc/bitset.hpp"
#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc::detail {

// What reading a field's symbols proved about values stored twice.
enum class Proof {
  kNone,      // nothing: the symbols are checked after reading
  kKeysMet,   // numbers keyed while parsed (NumberKeys) that neither increase nor kept their keys apart
  kDistinct,  // every value is stored once
};

// x rounded to the nearest integer (ties to even) for |x| < 2^51, by adding and taking away
// 1.5 * 2^52: plain additions (nearbyint may be a call).
inline double round_small(double x) {
  constexpr double kShift = 0x1.8p52;
  return (x + kShift) - kShift;
}

// A bitmap of integer keys taken modulo its size, a power of two of at least 4 bits a symbol
// (so that it stays in the cache): keys that are a function of the value meet in it only when
// two values are one, as long as they lie within its size of one another (as ids, dates or
// amounts in cents do). `spread`, the keys' range as far as it is known, makes it larger, up
// to kMaxBitsPerSymbol bits a symbol.
constexpr std::uint64_t kMaxBitsPerSymbol = 32;
class KeyBitmap {
 public:
  KeyBitmap() = default;
  explicit KeyBitmap(std::size_t n, std::uint64_t spread = 0) {
    const std::uint64_t wanted = std::max<std::uint64_t>(4 * n, std::min<std::uint64_t>(spread, kMaxBitsPerSymbol * n));
    std::size_t bits = 4096;
    while (bits < wanted) bits <<= 1;
    words_.assign(bits / 64, 0);
    mask_ = bits - 1;
  }
  // Sets the key's bit; `met` gets it when it was set before.
  void add(std::uint64_t key, std::uint64_t& met) {
    const std::uint64_t at = key & mask_;
    const std::uint64_t bit = std::uint64_t{1} << (at & 63);
    const std::uint64_t word = words_[at >> 6];
    met |= word & bit;
    words_[at >> 6] = word | bit;
  }
  // Sets the key's bit, without asking whether it was set: keys set this way met exactly when
  // fewer bits are set than keys were (set_bits()), one pass over the words at the end in
  // place of a test and a branch-free merge per key.
  void set(std::uint64_t key) { words_[(key & mask_) >> 6] |= std::uint64_t{1} << (key & 63); }
  std::uint64_t set_bits() const { return count_bits(words_.data(), words_.size()); }
  std::size_t bytes() const { return words_.size() * 8; }
  // Adds the keys of another bitmap of the same size.
  void or_with(const KeyBitmap& other) {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }
  // The words and the mask, for a loop that sets keys itself as set() does.
  std::uint64_t* words() { return words_.data(); }
  std::uint64_t mask() const { return mask_; }

 private:
  std::vector<std::uint64_t> words_;
  std::uint64_t mask_ = 0;
};

// Proves a field's numbers distinct while they are parsed, with no pass of its own: they
// increase (ids, dates in file order), or their keys never meet in a KeyBitmap. A key is the
// number scaled by the power of ten up to 10^4 that the first symbols need (amounts, prices),
// rounded: the bits of x * scale + 1.5 * 2^52, a function of the value (-0 and 0 alike), so
// equal numbers always meet and distinct ones meet only when their keys are congruent. The
// bitmap is sized for twice the first symbols' range of keys (values spread as those are
// never fold onto one another). Keys are only set while parsing (KeyBitmap::set); whether two
// met is counted once at the end.
class NumberKeys {
 public:
  static constexpr std::size_t kScaleSample = 64;  // symbols that choose the scale
  static constexpr double kShift = 0x1.8p52;
  static constexpr double kKeyed = 0x1p51;  // keys order as their numbers below this, scaled

  explicit NumberKeys(std::size_t n) : n_(n) {}
  // The scale the first symbols need: the power of ten up to 10^4 that makes them integers.
  static double scale_for(const double* first, std::size_t n) {
    double scale = 1;
    for (std::size_t i = 0; i < n; ++i)
      while (scale < 1e4 && round_small(first[i] * scale) / scale != first[i]) scale *= 10;
    return scale;
  }
  // The scale and the bitmap for the first symbols, parsed before any is added.
  void choose_scale(const double* first, std::size_t n) { set_scale(scale_for(first, n), first, n); }
  // The same with the scale already chosen (scale_for of the same symbols).
  void set_scale(double scale, const double* first, std::size_t n) {
    scale_ = scale;
    std::uint64_t spread = 0;
    if (n > 0) {
      const auto [low, high] = std::minmax_element(first, first + n);
      if (std::fabs(*low * scale_) < kKeyed && std::fabs(*high * scale_) < kKeyed)
        spread = 2 * (key(*high, scale_) - key(*low, scale_));
    }
    seen_ = KeyBitmap(n_, spread);
  }
  double scale() const { return scale_; }
  std::size_t bitmap_bytes() const { return seen_.bytes(); }
  // A number's key at `scale`.
  static std::uint64_t key(double v, double scale) { return std::bit_cast<std::uint64_t>(rounded_sum(v * scale, kShift)); }
  // Each number in file order, after choose_scale.
  void add(double v) {
    up_ &= last_ < v;
    last_ = v;
    seen_.set(key(v, scale_));
    ++keys_;
  }
  // Numbers added a vector at a time, their keys made as add makes them (the product rounded,
  // then the sum) and set in bitmap() as KeyBitmap::set does: added() then takes what add
  // would have kept, the count of keys, the last number, and whether each was above the one
  // before.
  double last() const { return last_; }
  KeyBitmap& bitmap() { return seen_; }
  void added(std::size_t keys, double last, bool up) {
    keys_ += keys;
    last_ = last;
    up_ &= up;
  }
  // Adds the keys of the numbers that follow these in the file (another part of the same
  // section, keyed at the same scale for as many numbers); `ordered`: the first of them is
  // above the last of these.
  void join(const NumberKeys& next, bool ordered) {
    seen_.or_with(next.seen_);
    keys_ += next.keys_;
    up_ = up_ && next.up_ && ordered;
    last_ = next.last_;
  }
  // True when the numbers added are proven distinct.
  bool distinct() const { return up_ || seen_.set_bits() == keys_; }

  // product + shift with the product rounded first: never fused into one multiply-add, which
  // rounds once and could give one number two keys on two paths.
  static double rounded_sum(double product, double shift) {
#if defined(__GNUC__)
    asm("" : "+x"(product));
#endif
    return product + shift;
  }

 private:
  std::size_t n_;
  KeyBitmap seen_;
  double scale_ = 1;
  double last_ = -std::numeric_limits<double>::infinity();
  std::uint64_t keys_ = 0;
  bool up_ = true;
};

// Whether a table's symbols may hold one value twice (false: they are distinct), given what
// the parse proved; a true answer is checked exactly by the caller.
bool symbols_may_repeat(const SymbolTable& t, Proof proof, CpuAccount* cpu);

}  // namespace assoc::detail
