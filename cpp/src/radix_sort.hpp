#pragma once
// Sorting unsigned 64-bit keys whose bits past the lowest `bits` are zero: least significant
// digit first, 11 bits a digit. One pass counts every digit's values, then each digit that
// not every key shares is a scatter pass. n keys are read and written about bits / 11 times,
// where a comparison sort would compare each about log2(n) times (a cube of two million rows
// sorted by two dimensions: 48 bits, 5 passes against 21).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace assoc::detail {

inline void radix_sort(std::vector<std::uint64_t>& keys, unsigned bits) {
  constexpr unsigned kDigit = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kDigit;
  const std::size_t n = keys.size();
  if (n < 1024) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  const unsigned digits = (bits + kDigit - 1) / kDigit;
  std::vector<std::size_t> count(std::size_t{digits} * kBuckets, 0);
  for (const std::uint64_t k : keys)
    for (unsigned d = 0; d < digits; ++d) ++count[d * kBuckets + ((k >> (d * kDigit)) & (kBuckets - 1))];
  std::vector<std::uint64_t> other(n);
  std::uint64_t* from = keys.data();
  std::uint64_t* to = other.data();
  for (unsigned d = 0; d < digits; ++d) {
    std::size_t* c = count.data() + std::size_t{d} * kBuckets;
    const unsigned shift = d * kDigit;
    if (c[(from[0] >> shift) & (kBuckets - 1)] == n) continue;  // one value for all: in order
    std::size_t at = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      const std::size_t here = c[b];
      c[b] = at;
      at += here;
    }
    for (std::size_t i = 0; i < n; ++i) to[c[(from[i] >> shift) & (kBuckets - 1)]++] = from[i];
    std::swap(from, to);
  }
  if (from != keys.data()) std::copy(from, from + n, keys.data());
}

}  // namespace assoc::detail
