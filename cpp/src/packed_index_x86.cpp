// The x86 vector kernels of PackedIndex: see packed_index_x86.hpp.
#include "packed_index_x86.hpp"

#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "assoc/bitset.hpp"
#include "assoc/packed_index.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace assoc {
namespace detail {

#if defined(__x86_64__) && defined(__GNUC__)
#define ASSOC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))
// GCC 12's intrinsics headers start some results from a deliberately undefined register.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

using BlockDecoder = void (*)(const std::uint8_t*, std::size_t, std::size_t, std::uint32_t, std::uint32_t*);
using CodeMatcher = void (*)(const std::uint8_t*, std::size_t, std::size_t, const std::uint8_t*, std::uint64_t*);


// 16 rows of width W at a time: 16 rows are 2W whole bytes; a byte permutation gives each
// row's lane the 4 bytes from the one holding its first bit (the same for every such group),
// a shift and a mask its code. The permutation and the shifts, made once per call.
template <unsigned W>
struct SixteenRows {
  __m512i index, shifts;
};

template <unsigned W>
ASSOC_AVX512 SixteenRows<W> sixteen_rows() {
  alignas(64) std::uint8_t index[64];
  alignas(64) std::uint32_t shift[16];
  for (unsigned i = 0; i < 16; ++i) {
    for (unsigned k = 0; k < 4; ++k) index[4 * i + k] = static_cast<std::uint8_t>(i * W / 8 + k);
    shift[i] = i * W % 8;
  }
  return {_mm512_load_si512(index), _mm512_load_si512(shift)};
}

// The codes of group g (rows 16g .. 16g+15) of a 64-row block.
template <unsigned W>
ASSOC_AVX512 inline __m512i sixteen_codes(const SixteenRows<W>& rows, const std::uint8_t* block, unsigned g) {
  constexpr __mmask64 kGroupBytes = (__mmask64{1} << (2 * W)) - 1;  // 2W <= 34 bytes
  const __m512i bytes = _mm512_maskz_loadu_epi8(kGroupBytes, block + 2 * W * g);
  const __m512i raw = _mm512_permutexvar_epi8(rows.index, bytes);
  return _mm512_and_si512(_mm512_srlv_epi32(raw, rows.shifts),
                          _mm512_set1_epi32(static_cast<int>((std::uint32_t{1} << W) - 1)));
}

// match_codes for width W on AVX-512 (VBMI): 16 rows at a time (SixteenRows). The code set,
// as bits, answers in registers for widths up to 10 (1,024 codes: 32 words in two registers),
// by a gather above.
template <unsigned W>
ASSOC_AVX512 void match_codes_avx512(const std::uint8_t* data, std::size_t first, std::size_t n,
                                     const std::uint8_t* code_set, std::uint64_t* out) {
  constexpr std::size_t kCodes = std::size_t{1} << W;
  constexpr std::size_t kWords = kCodes < 1024 ? 32 : kCodes / 32;  // 32-bit words of the bit set
  alignas(64) std::uint32_t bits[kWords] = {};
  if constexpr (kCodes < 64) {
    for (std::size_t c = 0; c < kCodes; ++c) bits[c >> 5] |= std::uint32_t{code_set[c] != 0} << (c & 31);
  } else {
    for (std::size_t c = 0; c < kCodes; c += 64) {
      const __m512i v = _mm512_loadu_si512(code_set + c);
      const std::uint64_t m = _mm512_test_epi8_mask(v, v);
      std::memcpy(bits + c / 32, &m, sizeof m);
    }
  }
  const SixteenRows<W> rows = sixteen_rows<W>();
  const __m512i low5 = _mm512_set1_epi32(31);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i table_lo = _mm512_load_si512(bits);
  const __m512i table_hi = _mm512_load_si512(bits + 16);
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* block = data + (first + b) * 8 * W;
    std::uint64_t word = 0;
#pragma GCC unroll 4
    for (unsigned g = 0; g < 4; ++g) {
      const __m512i code = sixteen_codes(rows, block, g);
      const __m512i at = _mm512_srli_epi32(code, 5);
      __m512i w32;
      if constexpr (W <= 10) {
        w32 = _mm512_permutex2var_epi32(table_lo, at, table_hi);
      } else {
        w32 = _mm512_i32gather_epi32(at, bits, 4);
      }
      const __m512i bit = _mm512_srlv_epi32(w32, _mm512_and_si512(code, low5));
      word |= std::uint64_t{_mm512_test_epi32_mask(bit, one)} << (16 * g);
    }
    out[b] = word;
  }
}

// decode_blocks for width W on AVX-512 (VBMI), 16 rows at a time (SixteenRows): each code
// less the bias (NULL's code 0 becomes kNull), stored.
template <unsigned W>
ASSOC_AVX512 void decode_blocks_avx512(const std::uint8_t* data, std::size_t first, std::size_t n, std::uint32_t bias,
                                       std::uint32_t* out) {
  const SixteenRows<W> rows = sixteen_rows<W>();
  const __m512i less = _mm512_set1_epi32(static_cast<int>(bias));
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* block = data + (first + b) * 8 * W;
    std::uint32_t* o = out + b * 64;
#pragma GCC unroll 4
    for (unsigned g = 0; g < 4; ++g) _mm512_storeu_si512(o + 16 * g, _mm512_sub_epi32(sixteen_codes(rows, block, g), less));
  }
}

// A one-bit column: each 16 rows' bits are a mask choosing 1 or 0 for each lane (the portable
// loop shifts each row's bit out on its own, a quarter of a 2-value dimension's cube).
ASSOC_AVX512 void decode_one_bit_avx512(const std::uint8_t* data, std::size_t first, std::size_t n, std::uint32_t bias,
                                        std::uint32_t* out) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i less = _mm512_set1_epi32(static_cast<int>(bias));
  for (std::size_t b = 0; b < n; ++b) {
    std::uint64_t w;
    std::memcpy(&w, data + (first + b) * 8, sizeof w);
    std::uint32_t* o = out + b * 64;
#pragma GCC unroll 4
    for (unsigned g = 0; g < 4; ++g) {
      const auto k = static_cast<__mmask16>(w >> (16 * g));
      _mm512_storeu_si512(o + 16 * g, _mm512_sub_epi32(_mm512_maskz_mov_epi32(k, one), less));
    }
  }
}

template <unsigned... Ws>
constexpr auto avx512_block_decoders(std::integer_sequence<unsigned, Ws...>) {
  return std::array<BlockDecoder, sizeof...(Ws)>{&decode_blocks_avx512<Ws + 1>...};
}

// Widths 1 to kMaxCodeSetWidth (those of 1, 2, 4, 8 and 16 bits take the portable path).
constexpr auto kAvx512BlockDecoders =
    avx512_block_decoders(std::make_integer_sequence<unsigned, PackedIndex::kMaxCodeSetWidth>{});

template <unsigned... Ws>
constexpr auto avx512_code_matchers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<CodeMatcher, sizeof...(Ws)>{&match_codes_avx512<Ws + 1>...};
}

constexpr auto kAvx512CodeMatchers =
    avx512_code_matchers(std::make_integer_sequence<unsigned, PackedIndex::kMaxCodeSetWidth>{});

// Whether this CPU (and its OS) runs AVX-512 with VBMI, and vector kernels may run.
bool avx512_matching() {
  static const bool on = [] {
    if (!avx512_allowed()) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vbmi");
  }();
  return on;
}

// AVX2, where AVX-512 (VBMI) is not: 8 rows of width W are W whole bytes, 4 of them to each
// 128-bit lane. A lane's 16 bytes are loaded from the byte holding its first row's first bit
// (one 16-byte load for both lanes when all 8 rows lie in it, W <= 14), a byte shuffle within
// the lane gives each row's lane the 4 bytes from the one holding its first bit, a shift and a
// mask its code. A code lies within 4 bytes up to 25 bits; wider than kMaxAvx2Width (the
// widest the tests reach, 2^20 values and more) stays portable.
constexpr std::uint32_t kMaxAvx2Width = 21;
#define ASSOC_AVX2 __attribute__((target("avx2")))

template <unsigned W>
struct EightRows {
  static_assert(W >= 1 && W <= kMaxAvx2Width);
  // Where the high lane's bytes start, from the group's first byte.
  static constexpr unsigned kHigh = W <= 14 ? 0 : 4 * W / 8;
  static_assert(7 * W / 8 - kHigh + 3 <= 15 && 3 * W / 8 + 3 <= 15, "a row's bytes within its lane");
  __m256i shuffle, shifts, mask;
};

template <unsigned W>
ASSOC_AVX2 EightRows<W> eight_rows() {
  alignas(32) std::uint8_t index[32];
  alignas(32) std::uint32_t shift[8];
  for (unsigned i = 0; i < 8; ++i) {
    const unsigned from = i * W / 8 - (i < 4 ? 0 : EightRows<W>::kHigh);  // within the row's lane
    for (unsigned k = 0; k < 4; ++k) index[4 * i + k] = static_cast<std::uint8_t>(from + k);
    shift[i] = i * W % 8;
  }
  return {_mm256_load_si256(reinterpret_cast<const __m256i*>(index)),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(shift)),
          _mm256_set1_epi32(static_cast<int>((std::uint32_t{1} << W) - 1))};
}

// The codes of the 8 rows whose W bytes start at `group`.
template <unsigned W>
ASSOC_AVX2 inline __m256i eight_codes(const EightRows<W>& rows, const std::uint8_t* group) {
  const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(group));
  __m256i bytes;
  if constexpr (EightRows<W>::kHigh == 0) {
    bytes = _mm256_broadcastsi128_si256(low);
  } else {
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(group + EightRows<W>::kHigh));
    bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
  }
  return _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, rows.shuffle), rows.shifts), rows.mask);
}

// decode_blocks for width W on AVX2 (EightRows): each code less the bias, stored.
template <unsigned W>
ASSOC_AVX2 void decode_blocks_avx2(const std::uint8_t* data, std::size_t first, std::size_t n, std::uint32_t bias,
                                   std::uint32_t* out) {
  const EightRows<W> rows = eight_rows<W>();
  const __m256i less = _mm256_set1_epi32(static_cast<int>(bias));
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* block = data + (first + b) * 8 * W;
    std::uint32_t* o = out + b * 64;
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; ++g)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 8 * g),
                          _mm256_sub_epi32(eight_codes(rows, block + W * g), less));
  }
}

// A one-bit column: each byte's 8 rows, the byte in every lane, and-ed with the lane's bit.
ASSOC_AVX2 void decode_one_bit_avx2(const std::uint8_t* data, std::size_t first, std::size_t n, std::uint32_t bias,
                                    std::uint32_t* out) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i less = _mm256_set1_epi32(static_cast<int>(bias));
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* bytes = data + (first + b) * 8;
    std::uint32_t* o = out + b * 64;
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; ++g) {
      const __m256i rows = _mm256_and_si256(_mm256_set1_epi32(bytes[g]), bit);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 8 * g), _mm256_sub_epi32(_mm256_min_epu32(rows, one), less));
    }
  }
}

// Codes a set holds at most for match_few_avx2 to take it: each one more costs a compare and
// an or per eight rows. Up to width 8 the look-up below is one permutation, which only a
// single code beats (measured, 10M rows: width 7, one code 0.9-1.0 ms against 1.2 ms, two to
// four 1.3-1.5 ms); wider, it takes four permutations and blends or a gather, and four codes
// still win (width 10: 1.2-1.6 ms against 2.4 ms; width 14: 1.4-1.6 against 4.3 ms).
constexpr unsigned kFewCodes = 4;
constexpr unsigned few_codes_for(unsigned width) { return width <= 8 ? 1 : kFewCodes; }

// match_codes for width W on AVX2 when the set holds 1 to kFewCodes codes (a click on a
// value or a few, the commonest selection): each row's code compared with them, no look-up.
// `codes` has kFewCodes entries (the first repeated where the set has fewer); `one`: the set
// holds codes[0] alone.
template <unsigned W>
ASSOC_AVX2 void match_few_avx2(const std::uint8_t* data, std::size_t first, std::size_t n,
                               const std::uint32_t* codes, bool one, std::uint64_t* out) {
  const EightRows<W> rows = eight_rows<W>();
  const __m256i c0 = _mm256_set1_epi32(static_cast<int>(codes[0]));
  const __m256i c1 = _mm256_set1_epi32(static_cast<int>(codes[1]));
  const __m256i c2 = _mm256_set1_epi32(static_cast<int>(codes[2]));
  const __m256i c3 = _mm256_set1_epi32(static_cast<int>(codes[3]));
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* block = data + (first + b) * 8 * W;
    std::uint64_t word = 0;
    if (one) {
#pragma GCC unroll 8
      for (unsigned g = 0; g < 8; ++g) {
        const __m256i hit = _mm256_cmpeq_epi32(eight_codes(rows, block + W * g), c0);
        word |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(hit)))} << (8 * g);
      }
    } else {
#pragma GCC unroll 8
      for (unsigned g = 0; g < 8; ++g) {
        const __m256i code = eight_codes(rows, block + W * g);
        const __m256i hit = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi32(code, c0), _mm256_cmpeq_epi32(code, c1)),
                                            _mm256_or_si256(_mm256_cmpeq_epi32(code, c2), _mm256_cmpeq_epi32(code, c3)));
        word |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(hit)))} << (8 * g);
      }
    }
    out[b] = word;
  }
}

// match_codes for width W on AVX2 (EightRows). The code set, as bits, answers in registers for
// widths up to 10 (up to 1,024 codes: 32 words in four registers, chosen by the word index's
// bits 3 and 4), by a gather above; a set of a few codes goes to match_few_avx2.
template <unsigned W>
ASSOC_AVX2 void match_codes_avx2(const std::uint8_t* data, std::size_t first, std::size_t n,
                                 const std::uint8_t* code_set, std::uint64_t* out) {
  constexpr std::size_t kCodes = std::size_t{1} << W;
  constexpr std::size_t kWords = W <= 8 ? 8 : W <= 10 ? 32 : kCodes / 32;  // 32-bit words of the bit set
  alignas(32) std::uint32_t bits[kWords] = {};
  std::size_t count = 0;  // codes in the set, counted as its bits are made
  if constexpr (kCodes < 32) {
    for (std::size_t c = 0; c < kCodes; ++c) bits[c >> 5] |= std::uint32_t{code_set[c] != 0} << (c & 31);
    count = popcount64(bits[0]);
  } else {
    const __m256i zero = _mm256_setzero_si256();
    for (std::size_t c = 0; c < kCodes; c += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(code_set + c));
      bits[c / 32] = ~static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, zero)));
      count += popcount64(bits[c / 32]);
    }
  }
  if (count >= 1 && count <= few_codes_for(W)) {
    std::uint32_t few[kFewCodes];
    unsigned k = 0;
    for (std::size_t w = 0; k < count; ++w)
      for (std::uint32_t x = bits[w]; x != 0; x &= x - 1)
        few[k++] = static_cast<std::uint32_t>(w * 32 + static_cast<unsigned>(std::countr_zero(x)));
    for (; k < kFewCodes; ++k) few[k] = few[0];
    match_few_avx2<W>(data, first, n, few, count == 1, out);
    return;
  }
  const EightRows<W> rows = eight_rows<W>();
  const __m256i low5 = _mm256_set1_epi32(31);
  const __m256i t0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
  __m256i t1 = t0, t2 = t0, t3 = t0;
  if constexpr (W > 8 && W <= 10) {
    t1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits + 8));
    t2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits + 16));
    t3 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits + 24));
  }
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* block = data + (first + b) * 8 * W;
    std::uint64_t word = 0;
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; ++g) {
      const __m256i code = eight_codes(rows, block + W * g);
      const __m256i at = _mm256_srli_epi32(code, 5);
      __m256i w32;
      if constexpr (W <= 8) {
        w32 = _mm256_permutevar8x32_epi32(t0, at);
      } else if constexpr (W <= 10) {
        const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(at, 28));
        const __m256 bit4 = _mm256_castsi256_ps(_mm256_slli_epi32(at, 27));
        const __m256 low = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(t0, at)),
                                            _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(t1, at)), bit3);
        const __m256 high = _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(t2, at)),
                                             _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(t3, at)), bit3);
        w32 = _mm256_castps_si256(_mm256_blendv_ps(low, high, bit4));
      } else {
        w32 = _mm256_i32gather_epi32(reinterpret_cast<const int*>(bits), at, 4);
      }
      // The code's bit to the lane's top, where movemask reads it.
      const __m256i top = _mm256_sllv_epi32(w32, _mm256_sub_epi32(low5, _mm256_and_si256(code, low5)));
      word |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(top)))} << (8 * g);
    }
    out[b] = word;
  }
}

template <unsigned... Ws>
constexpr auto avx2_block_decoders(std::integer_sequence<unsigned, Ws...>) {
  return std::array<BlockDecoder, sizeof...(Ws)>{&decode_blocks_avx2<Ws + 1>...};
}

constexpr auto kAvx2BlockDecoders = avx2_block_decoders(std::make_integer_sequence<unsigned, kMaxAvx2Width>{});

template <unsigned... Ws>
constexpr auto avx2_code_matchers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<CodeMatcher, sizeof...(Ws)>{&match_codes_avx2<Ws + 1>...};
}

constexpr auto kAvx2CodeMatchers =
    avx2_code_matchers(std::make_integer_sequence<unsigned, PackedIndex::kMaxCodeSetWidth>{});


}  // namespace

std::size_t vector_decode(const std::uint8_t* data, std::uint32_t width, std::size_t first, std::size_t n,
                          std::size_t reach, std::uint32_t bias, std::uint32_t* out) {
  if (width == 1 && avx512_matching()) {
    decode_one_bit_avx512(data, first, n, bias, out);
    return n;
  }
  // Widths of whole bytes or their halves decode as fast without them.
  const bool odd = (width & (width - 1)) != 0;
  if (odd && width <= PackedIndex::kMaxCodeSetWidth && avx512_matching()) {
    kAvx512BlockDecoders[width - 1](data, first, n, bias, out);
    return n;
  }
  if (width == 1 && avx2_kernels()) {
    decode_one_bit_avx2(data, first, n, bias, out);
    return n;
  }
  if (odd && width <= kMaxAvx2Width && avx2_kernels()) {
    kAvx2BlockDecoders[width - 1](data, first, reach, bias, out);
    return reach;
  }
  return 0;
}

std::size_t vector_match(const std::uint8_t* data, std::uint32_t width, std::size_t first, std::size_t n,
                         std::size_t reach, const std::uint8_t* code_set, std::uint64_t* out) {
  // Widths 1, 2 and 4 look up whole bytes already.
  if (width == 1 || width == 2 || width == 4 || width > PackedIndex::kMaxCodeSetWidth) return 0;
  if (avx512_matching()) {
    kAvx512CodeMatchers[width - 1](data, first, n, code_set, out);
    return n;
  }
  if (avx2_kernels()) {
    kAvx2CodeMatchers[width - 1](data, first, reach, code_set, out);
    return reach;
  }
  return 0;
}

#pragma GCC diagnostic pop

#else

std::size_t vector_decode(const std::uint8_t*, std::uint32_t, std::size_t, std::size_t, std::size_t, std::uint32_t,
                          std::uint32_t*) {
  return 0;
}

std::size_t vector_match(const std::uint8_t*, std::uint32_t, std::size_t, std::size_t, std::size_t,
                         const std::uint8_t*, std::uint64_t*) {
  return 0;
}

#endif

}  // namespace detail

bool simd_allowed() {
  static const bool on = [] {
    const char* env = std::getenv("ASSOC_SIMD");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

bool avx2_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool on = [] {
    if (!simd_allowed()) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return on;
#else
  return false;
#endif
}

bool avx512_allowed() {
  static const bool on = [] {
    const char* env = std::getenv("ASSOC_SIMD");
    return simd_allowed() && (env == nullptr || std::string(env) != "avx2");
  }();
  return on;
}

}  // namespace assoc
