#include "row_compress.hpp"

#include <algorithm>
#include <bit>

#include "assoc/packed_index.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ASSOC_ROW_COMPRESS_SIMD 1
#endif

namespace assoc::detail {
namespace {

#if ASSOC_ROW_COMPRESS_SIMD
// Compressed into a register, then stored whole: the form that stores compressed is slow on
// some cores. A store below the values not loaded yet (m <= j) leaves them intact in place.
__attribute__((target("avx512f"))) std::size_t compress_avx512(const std::uint64_t* words, std::size_t count,
                                                                const std::uint32_t* in, std::uint32_t* out) {
  std::size_t m = 0;
  for (std::size_t j = 0; j < count; j += 16) {
    const auto keep = static_cast<__mmask16>(words[j >> 6] >> (j & 63));
    const __m512i v = _mm512_loadu_si512(in + j);
    _mm512_storeu_si512(out + m, _mm512_maskz_compress_epi32(keep, v));
    m += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(keep)));
  }
  return m;
}

__attribute__((target("avx512f"))) std::size_t positions_avx512(const std::uint64_t* words, std::size_t count,
                                                                 std::uint32_t* out) {
  std::size_t m = 0;
  __m512i at = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(16);
  for (std::size_t j = 0; j < count; j += 16, at = _mm512_add_epi32(at, step)) {
    const auto keep = static_cast<__mmask16>(words[j >> 6] >> (j & 63));
    _mm512_storeu_si512(out + m, _mm512_maskz_compress_epi32(keep, at));
    m += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(keep)));
  }
  return m;
}

// AVX2: 8 rows a step. For each byte of row bits, the positions of its set bits packed to the
// front, a byte each (a table of 256 entries, 2 KiB): they permute the 8 values loaded.
struct EightRowPositions {
  std::uint64_t at[256];
};

constexpr EightRowPositions eight_row_positions() {
  EightRowPositions t{};
  for (unsigned keep = 0; keep < 256; ++keep) {
    unsigned m = 0;
    for (unsigned j = 0; j < 8; ++j)
      if ((keep >> j) & 1U) t.at[keep] |= std::uint64_t{j} << (8 * m++);
  }
  return t;
}

constexpr EightRowPositions kEightRowPositions = eight_row_positions();

__attribute__((target("avx2"))) inline __m256i eight_positions(unsigned keep) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&kEightRowPositions.at[keep])));
}

// The rows' values (or positions) 8 at a time: `eight(j, at)` gives rows j .. j+7's, where
// `at` holds the positions of those kept packed to the front; words without rows are skipped
// whole.
template <class Eight>
__attribute__((target("avx2"))) std::size_t each_eight(const std::uint64_t* words, std::size_t count, std::uint32_t* out,
                                                        Eight eight) {
  std::size_t m = 0;
  for (std::size_t w = 0; w * 64 < count; ++w) {
    const std::uint64_t bits = words[w];
    if (bits == 0) continue;
    const std::size_t end = std::min(count, w * 64 + 64);
    for (std::size_t j = w * 64; j < end; j += 8) {
      const auto keep = static_cast<unsigned>(bits >> (j & 63)) & 0xFFU;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + m), eight(j, eight_positions(keep)));
      m += static_cast<std::size_t>(std::popcount(keep));
    }
  }
  return m;
}

// The 8 values from row j, the kept ones to the front. A store below the values not loaded yet
// (m <= j) leaves them intact in place.
struct EightValues {
  const std::uint32_t* in;
  __attribute__((target("avx2"))) __m256i operator()(std::size_t j, __m256i at) const {
    return _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j)), at);
  }
};

// The kept rows' positions from row j.
struct EightPositions {
  __attribute__((target("avx2"))) __m256i operator()(std::size_t j, __m256i at) const {
    return _mm256_add_epi32(at, _mm256_set1_epi32(static_cast<int>(j)));
  }
};

bool avx512f() {
  static const bool on = [] {
    if (!avx512_allowed()) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return on;
}
#endif

}  // namespace

std::size_t compress_rows(const std::uint64_t* words, std::size_t count, const std::uint32_t* in, std::uint32_t* out) {
#if ASSOC_ROW_COMPRESS_SIMD
  if (avx512f()) return compress_avx512(words, count, in, out);
  if (avx2_kernels()) return each_eight(words, count, out, EightValues{in});
#endif
  std::size_t m = 0;
  for (std::size_t w = 0; w < (count + 63) / 64; ++w)
    for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1, ++m)
      out[m] = in[w * 64 + static_cast<std::size_t>(std::countr_zero(bits))];  // m <= j: in place
  return m;
}

std::size_t row_positions(const std::uint64_t* words, std::size_t count, std::uint32_t* out) {
#if ASSOC_ROW_COMPRESS_SIMD
  if (avx512f()) return positions_avx512(words, count, out);
  if (avx2_kernels()) return each_eight(words, count, out, EightPositions{});
#endif
  std::size_t m = 0;
  for (std::size_t w = 0; w < (count + 63) / 64; ++w)
    for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
      out[m++] = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
  return m;
}

}  // namespace assoc::detail
