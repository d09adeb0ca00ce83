// Bitset's summary of the words that hold set bits (bitset.hpp).
#include "assoc/bitset.hpp"

#include <algorithm>

#include "assoc/packed_index.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace assoc {
namespace {

// The summary word of words[0, k), k up to 64: bit j set where words[j] is not zero.
inline std::uint64_t used_words_portable(const std::uint64_t* words, std::size_t k) {
  std::uint64_t bits = 0;
  for (std::size_t j = 0; j < k; ++j) bits |= std::uint64_t{words[j] != 0} << j;
  return bits;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// Four words to four bits a step: a compare with zero and the lanes' signs, with no
// dependence from one word to the next.
__attribute__((target("avx2"))) void summarize_avx2(const std::uint64_t* words, std::size_t n_summary,
                                                    std::uint64_t* summary) {
  const __m256i zero = _mm256_setzero_si256();
  for (std::size_t at = 0; at < n_summary; ++at) {
    const std::uint64_t* w = words + at * 64;
    std::uint64_t bits = 0;
    for (unsigned j = 0; j < 64; j += 4) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + j));
      const auto empty = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(x, zero))));
      bits |= std::uint64_t{~empty & 0xFU} << j;
    }
    summary[at] = bits;
  }
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("popcnt"))) std::size_t count_bits_popcnt(const std::uint64_t* w, std::size_t n) {
  std::size_t bits = 0;
  for (std::size_t i = 0; i < n; ++i) bits += static_cast<std::size_t>(__builtin_popcountll(w[i]));
  return bits;
}
// Read while the library loads, after the CPU model (whatever the order of initialisers).
const bool kHasPopcnt = (__builtin_cpu_init(), __builtin_cpu_supports("popcnt"));
#endif

}  // namespace

// The build's baseline CPU has no popcount instruction: the words counted one by one in
// registers (popcount64) took 7 % of a selection's CPU on 10M rows (the count of its rows),
// and a library call per word in its place cost a tenth of a large number field's parse.
std::size_t count_bits(const std::uint64_t* words, std::size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (kHasPopcnt) return count_bits_popcnt(words, n);
#endif
  std::size_t bits = 0;
  for (std::size_t i = 0; i < n; ++i) bits += popcount64(words[i]);
  return bits;
}

void Bitset::summarize() {
  const std::size_t n = words_.size();
  summary_.assign((n + 63) / 64, 0);
  const std::size_t whole = n / 64;  // summary words of 64 words each
  std::size_t at = 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (avx2_kernels()) {  // the CPU runs AVX2 and ASSOC_SIMD allows vector kernels
    summarize_avx2(words_.data(), whole, summary_.data());
    at = whole;
  }
#endif
  for (; at < summary_.size(); ++at)
    summary_[at] = used_words_portable(words_.data() + at * 64, std::min<std::size_t>(64, n - at * 64));
}

}  // namespace assoc
