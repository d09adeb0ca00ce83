// The SIMD kernels of the QVD symbol reader (x86-64): int32 sections four symbols at a step
// with SSE4.1, runs of eight float64 symbols with AVX2.
#include "qvd_symbol_kernels.hpp"

#ifdef ASSOC_X86_SIMD
namespace assoc::detail {

// `n` int32 symbols (type byte 1, then 4 bytes) from q into out, four (20 bytes) a step: one
// 16-byte load holds the first three and the fourth's type byte, one shuffle gathers their
// values and another their type bytes. Returns non-zero when a type byte is not 1. `up` turns
// false when a value is not above the one before it (`last` for the first).
__attribute__((target("sse4.1"))) unsigned int32_symbols_sse41(const std::uint8_t* q, std::size_t n,
                                                              std::int32_t* out, std::int32_t last, bool& up) {
  const __m128i values = _mm_setr_epi8(1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14, -1, -1, -1, -1);
  const __m128i types = _mm_setr_epi8(0, 5, 10, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  unsigned bad = 0;
  unsigned down = 0;
  const auto one = [&](std::size_t i) {
    bad |= q[0] ^ 1U;
    std::int32_t v;
    std::memcpy(&v, q + 1, 4);
    down |= v <= last;
    last = v;
    out[i] = v;
  };
  std::size_t i = 0;
  // One by one up to a 16-byte boundary of `out`, where the streaming stores can start.
  for (; i < n && (reinterpret_cast<std::uintptr_t>(out + i) & 15) != 0; ++i, q += 5) one(i);
  __m128i before = _mm_set1_epi32(last);  // lane 3: the value before the four
  __m128i above = _mm_set1_epi32(-1);     // lanes where every value was above the one before
  for (; i + 4 <= n; i += 4, q += 20) {
    if ((i & 63) == 0) prefetch_ahead(q, 320);  // the hardware prefetcher stops at each page
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    std::int32_t fourth;
    std::memcpy(&fourth, q + 16, 4);
    const __m128i v = _mm_insert_epi32(_mm_shuffle_epi8(a, values), fourth, 3);
    // Streamed past the caches: the array is written whole and read much later, and a
    // plain store would first read each line it fills.
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), v);
    bad |= static_cast<unsigned>(_mm_cvtsi128_si32(_mm_shuffle_epi8(a, types))) ^ 0x01010101U;
    above = _mm_and_si128(above, _mm_cmpgt_epi32(v, _mm_alignr_epi8(v, before, 12)));
    before = v;
  }
  down |= static_cast<unsigned>(_mm_movemask_epi8(above)) ^ 0xFFFFU;
  last = _mm_extract_epi32(before, 3);
  for (; i < n; ++i, q += 5) one(i);
  _mm_sfence();  // the streamed stores are seen before the task is done
  if (down) up = false;
  return bad;
}

// Whether the `n` int32 symbols at q are exactly first, first+1, …, first+n-1 (the caller
// checked that the last is within int32, so no value wraps): four at a time as
// int32_symbols_sse41 gathers them, compared with the values they must be, nothing stored.
__attribute__((target("sse4.1"))) bool int32_range_sse41(const std::uint8_t* q, std::size_t n, std::int32_t first) {
  const __m128i values = _mm_setr_epi8(1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14, -1, -1, -1, -1);
  const __m128i types = _mm_setr_epi8(0, 5, 10, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i four = _mm_set1_epi32(4);
  __m128i expected = _mm_add_epi32(_mm_set1_epi32(first), _mm_setr_epi32(0, 1, 2, 3));
  __m128i differ = _mm_setzero_si128();
  unsigned bad = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4, q += 20) {
    if ((i & 63) == 0) {
      prefetch_ahead(q, 320);
      // Most fields that are no range show it in their first symbols: stop at once.
      if (bad | static_cast<unsigned>(_mm_testz_si128(differ, differ) == 0)) return false;
    }
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    std::int32_t fourth;
    std::memcpy(&fourth, q + 16, 4);
    const __m128i v = _mm_insert_epi32(_mm_shuffle_epi8(a, values), fourth, 3);
    differ = _mm_or_si128(differ, _mm_xor_si128(v, expected));
    bad |= static_cast<unsigned>(_mm_cvtsi128_si32(_mm_shuffle_epi8(a, types))) ^ 0x01010101U;
    expected = _mm_add_epi32(expected, four);
  }
  for (; i < n; ++i, q += 5) {
    std::int32_t v;
    std::memcpy(&v, q + 1, 4);
    bad |= (q[0] ^ 1U) | static_cast<unsigned>(v != static_cast<std::int32_t>(std::int64_t{first} + std::int64_t(i)));
  }
  return bad == 0 && _mm_testz_si128(differ, differ) != 0;
}

const bool kHasSse41 = (__builtin_cpu_init(), __builtin_cpu_supports("sse4.1"));

// Runs of eight float64 symbols (72 bytes) from q, symbol i on, into out while a run fits in
// the `end` and `n` left and all its type bytes are 2, with single int32 and float64 symbols
// between runs; q moves past them, `ok` turns false at a number that is not finite, each
// number is added to `keys`, and the next symbol's index is returned. Per run: two 32-byte
// loads and a byte compare check the eight type bytes at once; the numbers are gathered four
// to a vector, checked finite, compared with the ones before them and keyed as vectors, and
// stored whole.
__attribute__((target("avx2"))) std::size_t float64_runs_avx2(const std::uint8_t*& q, const std::uint8_t* end,
                                                             double* out, std::size_t i, std::size_t n, bool& ok,
                                                             NumberKeys& keys) {
  const __m256i two = _mm256_set1_epi8(2);
  const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m256d largest = _mm256_set1_pd(std::numeric_limits<double>::max());
  const __m256d scale = _mm256_set1_pd(keys.scale());
  const __m256d shift = _mm256_set1_pd(NumberKeys::kShift);
  const std::uint8_t* r = q;
  // The loop's state stays in registers (a store and a wider load of it back would stall):
  // the number before the run in every lane, the lanes that were above the one before them
  // and the lanes that were finite, all runs so far.
  std::uint64_t* const words = keys.bitmap().words();
  const __m256i key_mask = _mm256_set1_epi64x(static_cast<long long>(keys.bitmap().mask()));
  const __m256i low6 = _mm256_set1_epi64x(63);
  const __m256i one = _mm256_set1_epi64x(1);
  __m256d before = _mm256_set1_pd(keys.last());
  __m256d up = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  __m256d finite_lanes = up;
  const std::size_t first = i;
  // The same for the symbols taken one by one between runs.
  const std::uint64_t single_mask = keys.bitmap().mask();
  bool one_up = true, one_finite = true;
  while (end - r >= 72 && n - i >= 8) {
    prefetch_ahead(r, 128);
    const auto lo = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)), two)));
    const auto hi = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32)), two)));
    // Type bytes at 0, 9, 18, 27 of the first 32 bytes, 36, 45, 54, 63 (4, 13, 22, 31) of the next.
    // A run starts on a 32-byte boundary of `out`, so that it fills two whole vectors of the
    // array with streaming stores.
    if ((lo & 0x08040201U) != 0x08040201U || (hi & 0x80402010U) != 0x80402010U ||
        (reinterpret_cast<std::uintptr_t>(out + i) & 31) != 0) {
      // Not a run: its first symbol one by one, when it is an int32 (as Qlik writes an integer
      // among decimals) or a float64 (up to the boundary), and the runs go on after it (the
      // loop left only at another type, or near the end).
      double v;
      if (*r == 1) {
        std::int32_t w;
        std::memcpy(&w, r + 1, 4);
        v = w;
        r += 5;
      } else if (*r == 2) {
        std::memcpy(&v, r + 1, 8);
        one_finite &= std::fabs(v) <= std::numeric_limits<double>::max();
        r += 9;
      } else {
        break;
      }
      stream_number(out + i, v);
      one_up &= _mm256_cvtsd_f64(before) < v;
      before = _mm256_set1_pd(v);
      const auto key = std::bit_cast<std::uint64_t>(NumberKeys::rounded_sum(v * keys.scale(), NumberKeys::kShift));
      words[(key & single_mask) >> 6] |= std::uint64_t{1} << (key & 63);
      ++i;
      continue;
    }
    double d[8];
    for (int k = 0; k < 8; ++k) std::memcpy(&d[k], r + 9 * k + 1, 8);
    const __m256d a = _mm256_setr_pd(d[0], d[1], d[2], d[3]);
    const __m256d b = _mm256_setr_pd(d[4], d[5], d[6], d[7]);
    _mm256_stream_pd(out + i, a);
    _mm256_stream_pd(out + i + 4, b);
    finite_lanes = _mm256_and_pd(finite_lanes, _mm256_cmp_pd(_mm256_and_pd(a, magnitude), largest, _CMP_LE_OQ));
    finite_lanes = _mm256_and_pd(finite_lanes, _mm256_cmp_pd(_mm256_and_pd(b, magnitude), largest, _CMP_LE_OQ));
    // The numbers before a's lanes: the one before the run, a0, a1, a2; before b's: a3, b0, b1, b2.
    const __m256d before_a = _mm256_blend_pd(_mm256_permute4x64_pd(a, 0x90), before, 0x1);
    const __m256d before_b = _mm256_blend_pd(_mm256_permute4x64_pd(b, 0x90), _mm256_permute4x64_pd(a, 0xFF), 0x1);
    up = _mm256_and_pd(up, _mm256_cmp_pd(before_a, a, _CMP_LT_OQ));
    up = _mm256_and_pd(up, _mm256_cmp_pd(before_b, b, _CMP_LT_OQ));
    before = _mm256_permute4x64_pd(b, 0xFF);
    // Keys as NumberKeys::add makes them: the product rounded (kept apart from the sum, so
    // never fused), then the sum; each key's word and bit as vectors, then set one by one.
    __m256d pa = _mm256_mul_pd(a, scale);
    __m256d pb = _mm256_mul_pd(b, scale);
    asm("" : "+x"(pa), "+x"(pb));
    const __m256i ka = _mm256_castpd_si256(_mm256_add_pd(pa, shift));
    const __m256i kb = _mm256_castpd_si256(_mm256_add_pd(pb, shift));
    alignas(32) std::uint64_t at[8], bit[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), _mm256_srli_epi64(_mm256_and_si256(ka, key_mask), 6));
    _mm256_store_si256(reinterpret_cast<__m256i*>(at + 4), _mm256_srli_epi64(_mm256_and_si256(kb, key_mask), 6));
    _mm256_store_si256(reinterpret_cast<__m256i*>(bit), _mm256_sllv_epi64(one, _mm256_and_si256(ka, low6)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(bit + 4), _mm256_sllv_epi64(one, _mm256_and_si256(kb, low6)));
    for (int k = 0; k < 8; ++k) words[at[k]] |= bit[k];
    r += 72;
    i += 8;
  }
  if (i > first) keys.added(i - first, _mm256_cvtsd_f64(before), one_up && _mm256_movemask_pd(up) == 0xF);
  if (_mm256_movemask_pd(finite_lanes) != 0xF || !one_finite) ok = false;
  q = r;
  return i;
}
const bool kHasAvx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));

}  // namespace assoc::detail
#endif
