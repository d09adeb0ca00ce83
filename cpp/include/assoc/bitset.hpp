#pragma once
// A fixed-size set of bits: the state vectors of selections, over rows or over symbols.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "assoc/big_blocks.hpp"

namespace assoc {

// Bits set in a word. Written out (SWAR) rather than std::popcount, which becomes a library
// call per word on targets without a popcount instruction in their baseline; this form also
// vectorises over arrays.
inline unsigned popcount64(std::uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<unsigned>((x * 0x0101010101010101ULL) >> 56);
}

class Bitset {
 public:
  Bitset() = default;
  // Zero, as the allocator hands out new memory (a set of 1 MiB and up, the rows of a table of
  // 8.4 million or more, takes a kept big block, whose pages are already present, instead of
  // faulting in fresh ones).
  explicit Bitset(std::size_t bits) : bits_(bits), words_((bits + 63) / 64) {}

  std::size_t size() const { return bits_; }
  std::size_t word_count() const { return words_.size(); }
  std::uint64_t* words() { return words_.data(); }
  const std::uint64_t* words() const { return words_.data(); }

  bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1U; }
  void set(std::size_t i) { words_[i >> 6] |= std::uint64_t{1} << (i & 63); }
  void reset(std::size_t i) { words_[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }

  // Sets bits [0, n).
  void set_first(std::size_t n) {
    const std::size_t whole = n / 64;
    std::fill(words_.begin(), words_.begin() + static_cast<std::ptrdiff_t>(whole), ~std::uint64_t{0});
    if (n % 64 != 0) words_[whole] |= (std::uint64_t{1} << (n % 64)) - 1;
  }

  std::size_t count() const {
    std::size_t n = 0;
    for (const std::uint64_t w : words_) n += popcount64(w);
    return n;
  }
  // Sizes must match in the three below.
  void and_with(const Bitset& o) {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= o.words_[i];
  }
  void or_with(const Bitset& o) {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
  }
  void and_not(const Bitset& o) {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= ~o.words_[i];
  }

  // Calls fn(i) for each set bit, in increasing order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      for (std::uint64_t x = words_[w]; x != 0; x &= x - 1)
        fn(w * 64 + static_cast<std::size_t>(std::countr_zero(x)));
    }
  }

  // Bytes the bits take (allocated capacity).
  std::size_t byte_size() const { return words_.capacity() * sizeof(std::uint64_t); }

 private:
  std::size_t bits_ = 0;
  std::vector<std::uint64_t, CallocAllocator<std::uint64_t>> words_;
};

}  // namespace assoc
