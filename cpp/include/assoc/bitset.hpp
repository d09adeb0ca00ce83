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

// Bits set in words[0, n): the CPU's popcount instruction where it has one.
std::size_t count_bits(const std::uint64_t* words, std::size_t n);

class Bitset {
 public:
  Bitset() = default;
  // Zero, as the allocator hands out new memory (a set of 1 MiB and up, the rows of a table of
  // 8.4 million or more, takes a kept big block, whose pages are already present, instead of
  // faulting in fresh ones).
  explicit Bitset(std::size_t bits) : bits_(bits), words_((bits + 63) / 64) {}

  std::size_t size() const { return bits_; }
  std::size_t word_count() const { return words_.size(); }
  // The words to write: any summary (below) is dropped, as the words may change.
  std::uint64_t* words() {
    drop_summary();
    return words_.data();
  }
  const std::uint64_t* words() const { return words_.data(); }

  bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1U; }
  void set(std::size_t i) {
    drop_summary();
    words_[i >> 6] |= std::uint64_t{1} << (i & 63);
  }
  void reset(std::size_t i) {
    drop_summary();
    words_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));
  }

  // The summary: bit w of its word w / 64 tells whether word w holds a set bit, so that a scan
  // of a set with few rows among many (one customer's 100 rows of 10M: 1.25 MB of words, of
  // which about 100 are not zero) reads 20 KB to find them. A producer that has written the
  // words calls summarize(); a change of the words through any other member drops it.
  void summarize();

  // The first word from `w` below `last` that is not zero, else `last`.
  std::size_t next_word(std::size_t w, std::size_t last) const {
    if (summary_.empty()) {
      while (w < last && words_[w] == 0) ++w;
      return w;
    }
    while (w < last) {
      const std::uint64_t bits = summary_[w / 64] >> (w & 63);
      if (bits != 0) return std::min(last, w + static_cast<std::size_t>(std::countr_zero(bits)));
      w = (w / 64 + 1) * 64;
    }
    return last;
  }
  // Words of [first, last) that are not zero.
  std::size_t words_in_use(std::size_t first, std::size_t last) const {
    std::size_t n = 0;
    for_each_word(first, last, [&](std::size_t w) { n += words_[w] != 0; });
    return n;
  }

  // Sets bits [0, n).
  void set_first(std::size_t n) {
    drop_summary();
    const std::size_t whole = n / 64;
    std::fill(words_.begin(), words_.begin() + static_cast<std::ptrdiff_t>(whole), ~std::uint64_t{0});
    if (n % 64 != 0) words_[whole] |= (std::uint64_t{1} << (n % 64)) - 1;
  }

  std::size_t count() const {
    std::size_t n = 0;
    if (!summary_.empty() && sparse_summary()) {
      for_each_word(0, words_.size(), [&](std::size_t w) { n += popcount64(words_[w]); });
      return n;
    }
    return count_bits(words_.data(), words_.size());
  }
  // Sizes must match in the three below.
  void and_with(const Bitset& o) {
    drop_summary();
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= o.words_[i];
  }
  void or_with(const Bitset& o) {
    drop_summary();
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
  }
  void and_not(const Bitset& o) {
    drop_summary();
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= ~o.words_[i];
  }

  // Calls fn(i) for each set bit, in increasing order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for_each_word(0, words_.size(), [&](std::size_t w) {
      for (std::uint64_t x = words_[w]; x != 0; x &= x - 1)
        fn(w * 64 + static_cast<std::size_t>(std::countr_zero(x)));
    });
  }

  // Calls fn(w) for the words of [first, last) that may be non-zero, in increasing order: those
  // the summary marks when it has one, every word otherwise.
  template <class Fn>
  void for_each_word(std::size_t first, std::size_t last, Fn&& fn) const {
    if (summary_.empty()) {
      for (std::size_t w = first; w < last; ++w) fn(w);
      return;
    }
    for (std::size_t w = first; w < last;) {
      const std::size_t at = w / 64;
      const std::size_t stop = std::min(last, (at + 1) * 64);
      std::uint64_t bits = summary_[at] >> (w & 63);
      if (stop - w < 64) bits &= (std::uint64_t{1} << (stop - w)) - 1;
      for (; bits != 0; bits &= bits - 1) fn(w + static_cast<std::size_t>(std::countr_zero(bits)));
      w = stop;
    }
  }

  // Bytes the bits take (allocated capacity), the summary's included.
  std::size_t byte_size() const {
    return words_.capacity() * sizeof(std::uint64_t) + summary_.capacity() * sizeof(std::uint64_t);
  }

 private:
  // Frees the summary's memory too, so that byte_size() counts only what is held.
  void drop_summary() {
    if (!summary_.empty()) summary_ = std::vector<std::uint64_t>();
  }
  std::size_t bits_ = 0;
  std::vector<std::uint64_t, CallocAllocator<std::uint64_t>> words_;
  // Whether at most one word in 64 is in use: then a count by the summary reads fewer cache
  // lines than a scan (which streams every line, where words read by the summary each wait
  // on a line of their own).
  bool sparse_summary() const {
    std::size_t used = 0;
    for (const std::uint64_t s : summary_) used += popcount64(s);
    return used * 64 <= words_.size();
  }

  std::vector<std::uint64_t> summary_;  // see summarize; empty while there is none
};

}  // namespace assoc
