// The x86 vector kernels of PackedIndex: see packed_index_x86.hpp.
#include "packed_index_x86.hpp"

#include <algorithm>
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
// false: the blocks are left to the portable loop.
using Avx2CodeMatcher = bool (*)(const std::uint8_t*, std::size_t, std::size_t, const std::uint8_t*, std::uint64_t*);


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

// Codes a set holds at most for match_few_avx2 to take it (widths over 10, where the look-up
// is a gather): each one more costs a compare and an or per eight rows (width 14: 1.4-1.6 ms
// against 4.3 ms for one to four codes, 10M rows, on a CPU with AVX-512 running AVX2).
constexpr unsigned kFewCodes = 4;

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

// Sixteen-bit lanes for codes of up to 16 bits: a 256-bit register holds 16 rows, twice the
// 32-bit lanes' (on CPUs that split 256-bit work into 128-bit halves, the permutations and
// blends of match_codes_avx2 cost most of a selection). ShortCodes<W>::half gives the codes of
// a block's 32 rows from `at` as two registers, the first holding rows 0-7 and 16-23, the
// second 8-15 and 24-31, so that packing two registers' lanes to bytes puts the 32 rows in
// order for one movemask.
//
// Where every code lies within the two bytes from the one holding its first bit (rows of 8
// start at bit offsets i * W % 8: up to 9 bits, 10 and 12), a byte shuffle within each 128-bit
// half gives each row's lane those bytes, a multiplication (a shift of its own per lane) moves
// the code to the lane's top and a shift down. Wider, 4 rows go to 32-bit lanes of each half
// (as in EightRows), shifted and masked there, and two such registers are packed to 16 bits.
template <unsigned W>
constexpr bool two_byte_rows() {
  for (unsigned i = 0; i < 8; ++i)
    if (i * W % 8 + W > 16) return false;
  return true;
}

template <unsigned W, bool = two_byte_rows<W>()>
struct ShortCodes;

template <unsigned W>
struct ShortCodes<W, true> {
  __m256i shuffle, lift;

  ASSOC_AVX2 static ShortCodes make() {
    alignas(32) std::uint8_t index[32];
    alignas(32) std::uint16_t lift[16];
    for (unsigned i = 0; i < 16; ++i) {
      const unsigned row = i % 8;
      index[2 * i] = static_cast<std::uint8_t>(row * W / 8);
      index[2 * i + 1] = static_cast<std::uint8_t>(row * W / 8 + 1);
      lift[i] = static_cast<std::uint16_t>(1U << (16 - W - row * W % 8));
    }
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(index)),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(lift))};
  }

  // The codes of the 8 rows at `low` (low half) and the 8 at `high` (high half).
  ASSOC_AVX2 __m256i eight_and_eight(const std::uint8_t* low, const std::uint8_t* high) const {
    const __m256i bytes = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(low))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(high)), 1);
    return _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, shuffle), lift), 16 - W);
  }

  ASSOC_AVX2 void half(const std::uint8_t* at, __m256i& first, __m256i& second) const {
    first = eight_and_eight(at, at + 2 * W);
    second = eight_and_eight(at + W, at + 3 * W);
  }
};

template <unsigned W>
struct ShortCodes<W, false> {
  static_assert(W <= 16, "codes of 16 bits at most");
  // Four rows from a whole byte (`even`), and four from the byte holding bit 4 * W (`odd`,
  // which starts 4 bits in when W is odd): 32-bit lanes' bytes and shifts for each.
  __m256i even, even_shifts, odd, odd_shifts, mask;

  ASSOC_AVX2 static ShortCodes make() {
    alignas(32) std::uint8_t index[2][32];
    alignas(32) std::uint32_t shift[2][8];
    for (unsigned kind = 0; kind < 2; ++kind) {
      const unsigned skip = kind == 0 ? 0 : 4 * W % 8;
      for (unsigned i = 0; i < 8; ++i) {
        const unsigned bit = skip + (i % 4) * W;
        for (unsigned k = 0; k < 4; ++k) index[kind][4 * i + k] = static_cast<std::uint8_t>(bit / 8 + k);
        shift[kind][i] = bit % 8;
      }
    }
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(index[0])),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(shift[0])),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(index[1])),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(shift[1])),
            _mm256_set1_epi32(static_cast<int>((1U << W) - 1))};
  }

  // The codes of the 4 rows at `low` (low half) and the 4 at `high` (high half), 32 bits each.
  ASSOC_AVX2 static __m256i four_and_four(const std::uint8_t* low, const std::uint8_t* high, __m256i index,
                                          __m256i shifts, __m256i mask) {
    const __m256i bytes = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(low))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(high)), 1);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, index), shifts), mask);
  }

  // Rows 0-3 and 16-19 with 4-7 and 20-23 packed give rows 0-7 and 16-23; likewise from row 8.
  ASSOC_AVX2 void half(const std::uint8_t* at, __m256i& first, __m256i& second) const {
    constexpr unsigned kOdd = 4 * W / 8;  // the byte holding row 4's first bit
    for (unsigned k = 0; k < 2; ++k) {
      const std::uint8_t* from = at + k * W;  // row 8k
      const __m256i low = four_and_four(from, from + 2 * W, even, even_shifts, mask);
      const __m256i high = four_and_four(from + kOdd, from + 2 * W + kOdd, odd, odd_shifts, mask);
      (k == 0 ? first : second) = _mm256_packus_epi32(low, high);
    }
  }
};

// How a set of up to kHashedCodes codes is matched in 16-bit lanes: by a hash of each row's
// code, (code * multiplier mod 2^16) >> 13, to one of 8 slots, each holding up to `tables`
// candidates (one per 16-byte table of eight 16-bit entries, a byte shuffle's look-up), or, for
// up to 4 codes, by comparing each row's code with every one (tables == 0). Each table more
// costs a shuffle, a compare and an or per 16 rows; 8 tables still cost less than half of
// match_codes_avx2's look-up on a CPU that splits 256-bit work.
constexpr unsigned kHashedCodes = 64;
constexpr unsigned kHashTables = 8;
constexpr unsigned kMultipliers = 64;  // multipliers tried for a set

struct ShortMatch {
  unsigned tables = 0;
  std::uint16_t multiplier = 0;
  alignas(16) std::uint16_t candidates[kHashTables][8];
};

inline unsigned hash_slot(std::uint16_t code, std::uint16_t multiplier) {
  return static_cast<std::uint16_t>(std::uint32_t{code} * multiplier) >> 13;
}

// The multiplier of kMultipliers (a fixed run of odd ones) that needs the fewest tables for the
// set codes[0 .. k); false when even that needs more than `most_tables` (up to kHashTables).
// An empty candidate holds a code of another slot, which no row of this slot's can equal.
inline bool hash_codes(const std::uint16_t* codes, unsigned k, unsigned most_tables, ShortMatch& plan) {
  const unsigned fewest = (k + 7) / 8;
  if (fewest > most_tables) return false;
  unsigned best = most_tables + 1;
  std::uint16_t best_multiplier = 0;
  for (unsigned attempt = 0; attempt < kMultipliers && best > fewest; ++attempt) {
    const auto m = static_cast<std::uint16_t>((0x9E37U * (attempt + 1)) | 1U);
    unsigned load[8] = {};
    unsigned most = 0;
    for (unsigned i = 0; i < k && most < best; ++i) most = std::max(most, ++load[hash_slot(codes[i], m)]);
    if (most < best) {
      best = most;
      best_multiplier = m;
    }
  }
  if (best > most_tables) return false;
  plan.tables = best;
  plan.multiplier = best_multiplier;
  unsigned load[8] = {};
  for (unsigned i = 0; i < k; ++i) {
    const unsigned slot = hash_slot(codes[i], best_multiplier);
    plan.candidates[load[slot]++][slot] = codes[i];
  }
  std::uint16_t elsewhere = 1;  // a code of a slot other than 0 (code 0's)
  while (hash_slot(elsewhere, best_multiplier) == 0) ++elsewhere;
  for (unsigned slot = 0; slot < 8; ++slot)
    for (unsigned t = load[slot]; t < kHashTables; ++t) plan.candidates[t][slot] = slot == 0 ? elsewhere : 0;
  return true;
}

// Lanes (0 or all ones) of the rows in `code` whose code is in the set: T tables by the hash,
// or (T == 0) the codes c[0..3] compared (C of them).
template <unsigned T, unsigned C>
ASSOC_AVX2 inline __m256i short_hits(__m256i code, const __m256i* c, __m256i multiplier) {
  if constexpr (T == 0) {
    __m256i hit = _mm256_cmpeq_epi16(code, c[0]);
    for (unsigned i = 1; i < C; ++i) hit = _mm256_or_si256(hit, _mm256_cmpeq_epi16(code, c[i]));
    return hit;
  } else {
    // A table holds its 8 entries' low bytes, then their high bytes: a lane's slot s looks up
    // bytes s and s + 8. (Shuffles, not a multiplication: that unit is the busiest already.)
    const __m256i slot = _mm256_srli_epi16(_mm256_mullo_epi16(code, multiplier), 13);
    const __m256i twice = _mm256_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14,  //
                                           0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
    const __m256i at = _mm256_add_epi16(_mm256_shuffle_epi8(slot, twice), _mm256_set1_epi16(0x0800));
    __m256i hit = _mm256_cmpeq_epi16(code, _mm256_shuffle_epi8(c[0], at));
    for (unsigned i = 1; i < T; ++i)
      hit = _mm256_or_si256(hit, _mm256_cmpeq_epi16(code, _mm256_shuffle_epi8(c[i], at)));
    return hit;
  }
}

// match_codes in 16-bit lanes (ShortCodes), 32 rows of a block at a time: `hits(a, z)` gives
// the bits of the 32 rows whose codes ShortCodes::half put in a and z.
template <unsigned W, typename Hits>
ASSOC_AVX2 inline void match_halves_avx2(const std::uint8_t* data, std::size_t first, std::size_t n, const Hits& hits,
                                         std::uint64_t* out) {
  const ShortCodes<W> rows = ShortCodes<W>::make();
  for (std::size_t b = 0; b < n; ++b) {
    const std::uint8_t* block = data + (first + b) * 8 * W;
    std::uint64_t word = 0;
#pragma GCC unroll 2
    for (unsigned h = 0; h < 2; ++h) {
      __m256i a, z;
      rows.half(block + 4 * W * h, a, z);
      word |= std::uint64_t{hits(a, z)} << (32 * h);
    }
    out[b] = word;
  }
}

// short_hits of the 32 rows, in order (packing a's and z's lanes to bytes).
template <unsigned T, unsigned C>
struct ShortHits {
  const __m256i* c;
  __m256i multiplier;
  ASSOC_AVX2 std::uint32_t operator()(__m256i a, __m256i z) const {
    const __m256i both = _mm256_packs_epi16(short_hits<T, C>(a, c, multiplier), short_hits<T, C>(z, c, multiplier));
    return static_cast<std::uint32_t>(_mm256_movemask_epi8(both));
  }
};

template <unsigned W, unsigned T, unsigned C>
ASSOC_AVX2 void match_shorts_avx2(const std::uint8_t* data, std::size_t first, std::size_t n, const __m256i* c,
                                  __m256i multiplier, std::uint64_t* out) {
  match_halves_avx2<W>(data, first, n, ShortHits<T, C>{c, multiplier}, out);
}

constexpr unsigned kMostByteTableWidth = 10;  // at 11 (16 tables), the portable loop is faster on Zen 1

// The rows' bits in the set's byte tables (match_bytes_avx2).
template <unsigned W>
struct ByteHits {
  static constexpr unsigned kTables = W <= 7 ? 1 : 1U << (W - 7);
  __m256i table[kTables];

  ASSOC_AVX2 std::uint32_t operator()(__m256i a, __m256i z) const {
    const __m256i seven = _mm256_set1_epi16(7);
    const __m256i bit_of = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16,
                                            32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    const __m256i at = _mm256_packus_epi16(_mm256_srli_epi16(a, 3), _mm256_srli_epi16(z, 3));
    const __m256i bit =
        _mm256_shuffle_epi8(bit_of, _mm256_packus_epi16(_mm256_and_si256(a, seven), _mm256_and_si256(z, seven)));
    __m256i byte = _mm256_shuffle_epi8(table[0], kTables == 1 ? at : _mm256_adds_epu8(at, _mm256_set1_epi8(0x70)));
    for (unsigned t = 1; t < kTables; ++t) {
      const __m256i own = _mm256_xor_si256(at, _mm256_set1_epi8(static_cast<char>(t << 4)));
      byte = _mm256_or_si256(byte, _mm256_shuffle_epi8(table[t], _mm256_adds_epu8(own, _mm256_set1_epi8(0x70))));
    }
    const auto missed = static_cast<std::uint32_t>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(byte, bit), _mm256_setzero_si256())));
    return ~missed;
  }
};

// Any set in a column of up to 10 bits, in byte lanes: the set's bits are 2^W / 8 bytes (up to
// 128, in 16-byte tables), each row's byte found by one shuffle per table (its index less the
// table's first, saturated so that other tables' indexes have the top bit, which a shuffle
// answers with 0), its bit by another shuffle. 32 rows a register: half the instructions of the
// 32-bit look-up per row for 10 bits, a quarter for 9.
template <unsigned W>
ASSOC_AVX2 void match_bytes_avx2(const std::uint8_t* data, std::size_t first, std::size_t n,
                                 const std::uint32_t* bits, std::uint64_t* out) {
  static_assert(W <= kMostByteTableWidth);
  ByteHits<W> hits;
  for (unsigned t = 0; t < ByteHits<W>::kTables; ++t)
    hits.table[t] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bits) + t));
  match_halves_avx2<W>(data, first, n, hits, out);
}

// The codes compared, and the most hash tables taken, rather than match_bytes_avx2's look-up
// at width W (measured, 10M rows, one thread, AMD EPYC without AVX-512: at width 7 the look-up
// took 2.2 ms against 1.9 for one code compared, 2.6 for four, 2.3-2.5 for one table; at 9,
// 3.6 against 2.5-3.1 for one or two tables, 2.9-3.6 for three; at 10, 4.6 against 2.6-2.8,
// 3.0, 3.6 and 4.5 for one to four tables).
template <unsigned W>
constexpr unsigned codes_compared() { return W <= 8 ? 1 : 4; }
template <unsigned W>
constexpr unsigned most_hash_tables() { return W <= 8 ? 0 : W == 9 ? 2 : W == 10 ? 3 : kHashTables; }

// match_codes_avx2's route for a set of 1 to kHashedCodes codes of up to 16 bits: false
// (nothing matched) when no hash of up to `most_tables` tables separates them.
template <unsigned W>
ASSOC_AVX2 bool match_few_shorts_avx2(const std::uint8_t* data, std::size_t first, std::size_t n,
                                      const std::uint32_t* bits, std::size_t count, unsigned most_tables,
                                      std::uint64_t* out) {
  std::uint16_t codes[kHashedCodes];
  unsigned k = 0;
  for (std::size_t w = 0; k < count; ++w)
    for (std::uint32_t x = bits[w]; x != 0; x &= x - 1)
      codes[k++] = static_cast<std::uint16_t>(w * 32 + static_cast<unsigned>(std::countr_zero(x)));
  __m256i c[kHashTables];
  if (k <= 4) {
    for (unsigned i = 0; i < 4; ++i) c[i] = _mm256_set1_epi16(static_cast<short>(codes[std::min(i, k - 1)]));
    const __m256i none = _mm256_setzero_si256();
    if (k == 1) {
      match_shorts_avx2<W, 0, 1>(data, first, n, c, none, out);
    } else if (k == 2) {
      match_shorts_avx2<W, 0, 2>(data, first, n, c, none, out);
    } else {
      match_shorts_avx2<W, 0, 4>(data, first, n, c, none, out);
    }
    return true;
  }
  ShortMatch plan;
  if (!hash_codes(codes, k, most_tables, plan)) return false;
  for (unsigned i = 0; i < kHashTables; ++i) {
    alignas(16) std::uint8_t bytes[16];
    for (unsigned slot = 0; slot < 8; ++slot) {
      bytes[slot] = static_cast<std::uint8_t>(plan.candidates[i][slot]);
      bytes[slot + 8] = static_cast<std::uint8_t>(plan.candidates[i][slot] >> 8);
    }
    c[i] = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(bytes)));
  }
  const __m256i multiplier = _mm256_set1_epi16(static_cast<short>(plan.multiplier));
  switch (plan.tables) {
    case 1: match_shorts_avx2<W, 1, 0>(data, first, n, c, multiplier, out); break;
    case 2: match_shorts_avx2<W, 2, 0>(data, first, n, c, multiplier, out); break;
    case 3: match_shorts_avx2<W, 3, 0>(data, first, n, c, multiplier, out); break;
    case 4: match_shorts_avx2<W, 4, 0>(data, first, n, c, multiplier, out); break;
    case 5: match_shorts_avx2<W, 5, 0>(data, first, n, c, multiplier, out); break;
    case 6: match_shorts_avx2<W, 6, 0>(data, first, n, c, multiplier, out); break;
    case 7: match_shorts_avx2<W, 7, 0>(data, first, n, c, multiplier, out); break;
    default: match_shorts_avx2<W, 8, 0>(data, first, n, c, multiplier, out); break;
  }
  return true;
}

// Whether a gather of 8 lanes costs more here than the portable loop's 8 look-ups: AMD's
// family 17h (Zen 1 and 2) runs it as microcode. Measured on Zen 1, 10M rows, one thread, 100
// to 5,000 codes: the gather 12.1-13.2 ms at width 16 and 12.5-13.6 ms at 17, the portable
// loop 6.4-7.6 and 9.4-10.4 ms (the codes decoded 8 at a time and stored for the look-ups,
// 10.9-16.5 ms: the look-ups' loads wait on the stores).
bool slow_gather() {
  static const bool slow = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("znver1") || __builtin_cpu_is("znver2");
  }();
  return slow;
}

// match_codes for width W on AVX2. A set of up to kHashedCodes codes of up to 16 bits goes to
// match_few_shorts_avx2 where that is faster (codes_compared, most_hash_tables), but one code
// of a width not two_byte_rows (at 17 bits, up to four) to match_few_avx2; otherwise, up to 10
// bits, to match_bytes_avx2; wider, to a gather from the code set as bits (EightRows), or where
// that is slow (slow_gather) to the portable loop (false).
template <unsigned W>
ASSOC_AVX2 bool match_codes_avx2(const std::uint8_t* data, std::size_t first, std::size_t n,
                                 const std::uint8_t* code_set, std::uint64_t* out) {
  constexpr std::size_t kCodes = std::size_t{1} << W;
  constexpr std::size_t kWords = W <= 10 ? 32 : kCodes / 32;  // 32-bit words of the bit set (zeros past it)
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
  if constexpr (W <= 16) {
    // (One code in 32-bit lanes is as fast where the 16-bit lanes are packed from them.)
    // Where the wider sets go to the portable loop (slow_gather), fewer tables beat it: at
    // widths 11 to 16 it took 5.9-6.5 ms, four tables 5.8-6.0 ms, seven or eight 6.0-8.7 ms.
    const unsigned most_tables =
        W > kMostByteTableWidth && slow_gather() ? std::min(most_hash_tables<W>(), 4U) : most_hash_tables<W>();
    const bool few = count <= codes_compared<W>() || (count <= kHashedCodes && most_tables > 0);
    const bool shorts = count >= 1 && few && (count > 1 || two_byte_rows<W>());
    if (shorts && match_few_shorts_avx2<W>(data, first, n, bits, count, most_tables, out)) return true;
  }
  if (count >= 1 && count <= kFewCodes && !two_byte_rows<W>() && (count == 1 || W > 16)) {
    std::uint32_t few[kFewCodes];
    unsigned k = 0;
    for (std::size_t w = 0; k < count; ++w)
      for (std::uint32_t x = bits[w]; x != 0; x &= x - 1)
        few[k++] = static_cast<std::uint32_t>(w * 32 + static_cast<unsigned>(std::countr_zero(x)));
    for (; k < kFewCodes; ++k) few[k] = few[0];
    match_few_avx2<W>(data, first, n, few, count == 1, out);
    return true;
  }
  if constexpr (W <= kMostByteTableWidth) {
    match_bytes_avx2<W>(data, first, n, bits, out);
  } else {
    if (slow_gather()) return false;
    const EightRows<W> rows = eight_rows<W>();
    const __m256i low5 = _mm256_set1_epi32(31);
    for (std::size_t b = 0; b < n; ++b) {
      const std::uint8_t* block = data + (first + b) * 8 * W;
      std::uint64_t word = 0;
#pragma GCC unroll 8
      for (unsigned g = 0; g < 8; ++g) {
        const __m256i code = eight_codes(rows, block + W * g);
        const __m256i w32 = _mm256_i32gather_epi32(reinterpret_cast<const int*>(bits), _mm256_srli_epi32(code, 5), 4);
        // The code's bit to the lane's top, where movemask reads it.
        const __m256i top = _mm256_sllv_epi32(w32, _mm256_sub_epi32(low5, _mm256_and_si256(code, low5)));
        word |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(top)))} << (8 * g);
      }
      out[b] = word;
    }
  }
  return true;
}

template <unsigned... Ws>
constexpr auto avx2_block_decoders(std::integer_sequence<unsigned, Ws...>) {
  return std::array<BlockDecoder, sizeof...(Ws)>{&decode_blocks_avx2<Ws + 1>...};
}

constexpr auto kAvx2BlockDecoders = avx2_block_decoders(std::make_integer_sequence<unsigned, kMaxAvx2Width>{});

template <unsigned... Ws>
constexpr auto avx2_code_matchers(std::integer_sequence<unsigned, Ws...>) {
  return std::array<Avx2CodeMatcher, sizeof...(Ws)>{&match_codes_avx2<Ws + 1>...};
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
    return kAvx2CodeMatchers[width - 1](data, first, reach, code_set, out) ? reach : 0;
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
