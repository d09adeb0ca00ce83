// QVD symbol tables: a field's section of typed symbols (int32, float64, text, or a number with
// a text), read by tight loops when all are of one plain type, else one by one with every length
// checked against the field's Length.
#include "qvd_symbols.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/bitset.hpp"
#include "assoc/hash.hpp"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include "assoc/utf8.hpp"

namespace assoc::detail {
namespace {

static_assert(std::endian::native == std::endian::little, "QVD numbers and records are little-endian");

// The NUL-terminated UTF-8 text at p, which must end before `end`; p moves past the NUL.
std::string_view read_text(const std::uint8_t*& p, const std::uint8_t* end, const std::string& where,
                           std::uint64_t i) {
  const void* nul = std::memchr(p, 0, static_cast<std::size_t>(end - p));
  if (!nul) fail_qvd(where + ": the text of symbol " + std::to_string(i) + " has no terminating NUL in the field's bytes");
  const auto n = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - p);
  if (!valid_utf8(p, n)) fail_qvd(where + ": the text of symbol " + std::to_string(i) + " is not valid UTF-8");
  std::string_view t(reinterpret_cast<const char*>(p), n);
  p += n + 1;
  return t;
}

// Asks for the `n` bytes kPrefetchDistance past p (a prefetch never faults, even past the
// end of the data).
constexpr std::size_t kPrefetchDistance = 4096;
inline void prefetch_ahead(const std::uint8_t* p, std::size_t n) {
  const auto at = reinterpret_cast<std::uintptr_t>(p) + kPrefetchDistance;
  for (std::size_t b = 0; b < n; b += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + b));
}

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

#if defined(__x86_64__) && defined(__GNUC__)
#define ASSOC_X86_SIMD
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

// Orders the streamed stores before whatever follows (the array handed over, or freed).
struct StreamFence {
  StreamFence() = default;
  StreamFence(const StreamFence&) = delete;
  StreamFence& operator=(const StreamFence&) = delete;
  ~StreamFence() { _mm_sfence(); }
};

// A number stored past the caches (see int32_symbols_sse41); an _mm_sfence must follow the
// last one before the array is handed over.
inline void stream_number(double* at, double v) {
  long long bits;
  std::memcpy(&bits, &v, 8);
  _mm_stream_si64(reinterpret_cast<long long*>(at), bits);
}
// Read while the library loads, after the CPU model (whatever the order of initialisers).
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
#endif

// What reading a field's symbols proved about values stored twice.
enum class Proof {
  kNone,      // nothing: the symbols are checked after reading
  kKeysMet,   // numbers keyed while parsed (NumberKeys) that neither increase nor kept their keys apart
  kDistinct,  // every value is stored once
};

// Whether a section of `n` int32 symbols (5 bytes each) holds consecutive integers, each one
// above the one before (ids 0..N-1 as a table of row numbers stores them); then `first` is
// the first. Every symbol is checked (its type byte and its value) in parallel chunks, and
// none is stored: the table is then the range alone (SymbolTable::of_int_range).
bool int32_range(const std::uint8_t* p, std::size_t n, std::int32_t& first, CpuAccount* cpu) {
  if (n < 2 || p[0] != 1) return false;
  std::memcpy(&first, p + 1, 4);
  const std::int64_t last = std::int64_t{first} + static_cast<std::int64_t>(n) - 1;
  if (last > std::numeric_limits<std::int32_t>::max()) return false;
  const auto at = [&](std::size_t i) {
    std::int32_t v;
    std::memcpy(&v, p + 5 * i + 1, 4);
    return p[5 * i] == 1 && v == static_cast<std::int32_t>(std::int64_t{first} + static_cast<std::int64_t>(i));
  };
  // Most other fields differ at the second or the last symbol: no parallel step for them.
  if (!at(1) || !at(n - 1)) return false;
  std::atomic<bool> other{false};
  const std::int32_t from = first;
  parallel_ranges(
      n, 1,
      [&](std::size_t begin, std::size_t end) {
        if (other.load(std::memory_order_relaxed)) return;
        const std::uint8_t* q = p + 5 * begin;
        const auto first_here = static_cast<std::int32_t>(std::int64_t{from} + static_cast<std::int64_t>(begin));
        bool range = true;
#ifdef ASSOC_X86_SIMD
        if (kHasSse41) {
          range = int32_range_sse41(q, end - begin, first_here);
        } else
#endif
        {
          for (std::size_t i = begin; i < end && range; ++i) range = at(i);
        }
        if (!range) other.store(true, std::memory_order_relaxed);
      },
      cpu, std::size_t{1} << 16);
  return !other.load();
}

// A section of int32 symbols alone (5 bytes each), parsed in parallel chunks straight into the
// table's array; nothing when a symbol has another type. `proof` is kDistinct when every value
// is above the one before it.
std::optional<SymbolTable> read_int32_symbols(const std::uint8_t* p, std::size_t n, Proof& proof, CpuAccount* cpu) {
  constexpr std::size_t kMinChunk = std::size_t{1} << 16;
  IntArray values;
  {
    big_blocks::Uncleared every_element_is_written_below;
    values.resize(n);
  }
  std::atomic<bool> other{false}, down{false};
  parallel_ranges(
      n, 1,
      [&](std::size_t begin, std::size_t end) {
        const std::uint8_t* q = p + 5 * begin;
        std::int32_t* out = values.data();
        // The value before the chunk, from the file (another chunk writes it to `values`). The
        // first symbol has none: the least int32 (a first symbol of that value then only costs
        // the hash check).
        std::int32_t last = std::numeric_limits<std::int32_t>::lowest();
        if (begin > 0) std::memcpy(&last, q - 4, 4);
        bool up = true;
        unsigned bad = 0;  // a loop without an exit: no branch per symbol
#ifdef ASSOC_X86_SIMD
        if (kHasSse41) {
          if (int32_symbols_sse41(q, end - begin, out + begin, last, up)) other.store(true, std::memory_order_relaxed);
          if (!up) down.store(true, std::memory_order_relaxed);
          return;
        }
#endif
        for (std::size_t i = begin; i < end; ++i, q += 5) {
          bad |= q[0] ^ 1U;
          std::int32_t v;
          std::memcpy(&v, q + 1, 4);
          out[i] = v;
          up &= last < v;
          last = v;
        }
        if (bad) other.store(true, std::memory_order_relaxed);
        if (!up) down.store(true, std::memory_order_relaxed);
      },
      cpu, kMinChunk);
  if (other.load()) return std::nullopt;
  if (!down.load()) proof = Proof::kDistinct;
  return SymbolTable::of_ints(std::move(values));
}

// One number (an int32 or float64 symbol) stored into the table's array, streamed past the
// caches where the CPU can (runs and single numbers alike, so that no line mixes both kinds of
// store); a StoreFence must end the stores before the array is handed over.
inline void put_number(double* at, double v) {
#ifdef ASSOC_X86_SIMD
  stream_number(at, v);
#else
  *at = v;
#endif
}

// Orders the streamed stores of the thread that made it before whatever follows (nothing to
// do where stores are not streamed).
struct StoreFence {
#ifdef ASSOC_X86_SIMD
  StreamFence fence;
#else
  ~StoreFence() {}  // (nothing to order; not a variable left unused)
#endif
};

// One int32 or float64 symbol at q (before `end`) into v, q moved past it; false at another
// type or a symbol cut short. `ok` turns false at a number that is not finite.
inline bool one_number(const std::uint8_t*& q, const std::uint8_t* end, double& v, bool& ok) {
  if (end - q >= 9 && *q == 2) {
    std::memcpy(&v, q + 1, 8);
    ok &= std::isfinite(v);
    q += 9;
  } else if (end - q >= 5 && *q == 1) {
    std::int32_t w;
    std::memcpy(&w, q + 1, 4);
    v = w;
    q += 5;
  } else {
    return false;
  }
  return true;
}

// Symbols i to n-1 of a section of int32 and float64 symbols, from q (before `end`), into out,
// each number keyed in `keys` (its scale chosen); q moves past them. False at a symbol of
// another type or one cut short; `ok` turns false at a number that is not finite.
bool parse_numbers(const std::uint8_t*& q, const std::uint8_t* end, double* out, std::size_t i, std::size_t n,
                   NumberKeys& keys, bool& ok) {
  // Runs of eight float64 symbols are checked with one branch (the common case).
  const auto run_fits = [&] { return end - q >= 72 && n - i >= 8; };
  while (i < n) {
#ifdef ASSOC_X86_SIMD
    if (kHasAvx2) i = float64_runs_avx2(q, end, out, i, n, ok, keys);
#endif
    while (run_fits()) {
      prefetch_ahead(q, 128);  // the 72 bytes of a run, a few pages ahead
      unsigned types = 0;
      for (std::size_t k = 0; k < 8; ++k) types |= q[9 * k] ^ 2U;
      if (types) break;
      for (std::size_t k = 0; k < 8; ++k) {
        double v;
        std::memcpy(&v, q + 9 * k + 1, 8);
        ok &= std::fabs(v) <= std::numeric_limits<double>::max();
        put_number(&out[i + k], v);
        keys.add(v);
      }
      q += 72;
      i += 8;
    }
    if (i == n) break;
    double v;
    if (!one_number(q, end, v, ok)) return false;
    put_number(&out[i], v);
    keys.add(v);
    ++i;
  }
  return true;
}

// A section of float64 symbols alone (9 bytes each), parsed in parallel parts straight into
// the table's array. Each part keys its numbers as the section of int32 and float64 symbols
// does, at the scale the first symbols choose, into a bitmap of its own; the bitmaps are then
// merged. Nothing when a symbol is of another type or a number is not finite. Parts are at
// least kMinPart symbols, and their bitmaps take at most kPartKeyBytes together.
constexpr std::size_t kMinPart = std::size_t{1} << 16;
constexpr std::size_t kPartKeyBytes = std::size_t{64} << 20;
std::optional<SymbolTable> read_float64_symbols(const std::uint8_t* p, std::size_t n, Proof& proof, CpuAccount* cpu) {
  double first[NumberKeys::kScaleSample];
  const std::size_t n_first = std::min(n, NumberKeys::kScaleSample);
  for (std::size_t i = 0; i < n_first; ++i) {
    if (p[9 * i] != 2) return std::nullopt;
    std::memcpy(&first[i], p + 9 * i + 1, 8);
  }
  const double scale = NumberKeys::scale_for(first, n_first);
  std::vector<NumberKeys> keys;
  keys.emplace_back(n);
  keys.back().set_scale(scale, first, n_first);
  const std::size_t key_bytes = keys.back().bitmap_bytes();
  const std::size_t parts = std::clamp<std::size_t>(
      std::min<std::size_t>({threads(), n / kMinPart, kPartKeyBytes / std::max<std::size_t>(key_bytes, 1)}), 1, n);
  for (std::size_t k = 1; k < parts; ++k) {
    keys.emplace_back(n);
    keys.back().set_scale(scale, first, n_first);
  }
  NumberArray numbers;
  {
    big_blocks::Uncleared every_element_is_written_below;  // or the table is dropped
    numbers.resize(n);
  }
  double* out = numbers.data();
  const auto part_start = [&](std::size_t k) { return n * k / parts; };
  std::atomic<bool> bad{false};
  parallel_for(
      parts,
      [&](std::size_t k) {
        const std::size_t begin = part_start(k), end = part_start(k + 1);
        const std::uint8_t* q = p + 9 * begin;
        const std::uint8_t* const stop = p + 9 * end;
        bool ok = true;
        const StoreFence fence;
        // An int32 symbol among them would end the part short of its last byte.
        if (!parse_numbers(q, stop, out, begin, end, keys[k], ok) || !ok || q != stop)
          bad.store(true, std::memory_order_relaxed);
      },
      cpu);
  if (bad.load()) return std::nullopt;
  for (std::size_t k = 1; k < parts; ++k) keys[0].join(keys[k], out[part_start(k) - 1] < out[part_start(k)]);
  proof = keys[0].distinct() ? Proof::kDistinct : Proof::kKeysMet;
  return SymbolTable::of_numbers(std::move(numbers), /*all_finite=*/true);  // checked above
}

// Fields whose symbols are all int32, all float64 or all text (the common case) are read by
// tight loops straight into the table's arrays. Anything else, or anything wrong, returns
// nothing and takes the general path, which also names the exact problem. `proof` says what
// the loops proved about repeats.
std::optional<SymbolTable> read_plain_symbols(const FieldHeader& f, const std::uint8_t* data, Proof& proof,
                                              CpuAccount* cpu) {
  proof = Proof::kNone;
  const std::uint8_t* const p = data + f.offset;
  const auto n = static_cast<std::size_t>(f.n_symbols);
  const auto length = static_cast<std::size_t>(f.length);
  if (n == 0 || length == 0) return std::nullopt;
  switch (p[0]) {
    case 1:
    case 2: {
      if (p[0] == 1 && length == 5 * n) {
        std::int32_t first = 0;
        if (int32_range(p, n, first, cpu)) {
          proof = Proof::kDistinct;  // each above the one before
          return SymbolTable::of_int_range(first, static_cast<std::uint32_t>(n));
        }
        if (auto t = read_int32_symbols(p, n, proof, cpu)) return t;
      } else if (p[0] == 2 && length == 9 * n) {
        if (auto t = read_float64_symbols(p, n, proof, cpu)) return t;
      }
      // Numbers: float64, with int32 where a value is an integer (as Qlik writes them), parsed
      // straight into the table's array and keyed as they are parsed.
      NumberArray numbers;
      {
        big_blocks::Uncleared every_element_is_written_below;  // or the table is dropped
        numbers.resize(n);
      }
      double* out = numbers.data();
      const std::uint8_t* q = p;
      const std::uint8_t* const end = p + length;
      bool ok = true;
      NumberKeys keys(n);
      {
        const StoreFence fence;  // the numbers are streamed past the caches
        // The first symbols one by one: they choose the keys' scale.
        double first[NumberKeys::kScaleSample];
        const std::size_t n_first = std::min(n, NumberKeys::kScaleSample);
        for (std::size_t i = 0; i < n_first; ++i) {
          if (!one_number(q, end, first[i], ok)) return std::nullopt;
          put_number(&out[i], first[i]);
        }
        keys.choose_scale(first, n_first);
        for (std::size_t i = 0; i < n_first; ++i) keys.add(first[i]);
        if (!parse_numbers(q, end, out, n_first, n, keys, ok)) return std::nullopt;
      }
      if (!ok || q != end) return std::nullopt;
      proof = keys.distinct() ? Proof::kDistinct : Proof::kKeysMet;
      return SymbolTable::of_numbers(std::move(numbers), /*all_finite=*/true);  // checked above
    }
    case 4: {
      // Type bytes and NULs are ASCII, so the section is valid UTF-8 exactly when every text is.
      if (length > 0xFFFFFFFFULL || !valid_utf8(p, length)) return std::nullopt;
      std::vector<char> text;
      text.reserve(length - 2 * n);
      std::vector<std::uint32_t> offsets;
      offsets.reserve(n + 1);
      offsets.push_back(0);
      const std::uint8_t* q = p;
      const std::uint8_t* const end = p + length;
      for (std::size_t i = 0; i < n; ++i) {
        if (q == end || *q != 4) return std::nullopt;
        ++q;
        const auto* nul = static_cast<const std::uint8_t*>(std::memchr(q, 0, static_cast<std::size_t>(end - q)));
        if (!nul) return std::nullopt;
        text.insert(text.end(), q, nul);
        offsets.push_back(static_cast<std::uint32_t>(text.size()));
        q = nul + 1;
      }
      if (q != end) return std::nullopt;
      return SymbolTable::of_texts(std::move(text), std::move(offsets));
    }
    default:
      return std::nullopt;
  }
}

// The general path: every type, one symbol at a time, each length checked.
SymbolTable read_any_symbols(const FieldHeader& f, const std::uint8_t* data) {
  const std::string where = "field " + quote(f.name);
  const std::uint8_t* p = data + f.offset;
  const std::uint8_t* const end = p + f.length;
  SymbolTableBuilder b;
  auto need = [&](std::size_t n, std::uint64_t i) {
    if (static_cast<std::size_t>(end - p) < n)
      fail_qvd(where + ": symbol " + std::to_string(i) + " runs past the field's Length of " + std::to_string(f.length) +
           " bytes");
  };
  auto finite = [&](double d, std::uint64_t i) {
    if (!std::isfinite(d)) fail_qvd(where + ": symbol " + std::to_string(i) + " is not a finite number");
    return d;
  };
  for (std::uint64_t i = 0; i < f.n_symbols; ++i) {
    need(1, i);
    const std::uint8_t type = *p++;
    switch (type) {
      case 1: {  // int32
        need(4, i);
        std::int32_t v;
        std::memcpy(&v, p, 4);
        p += 4;
        b.append(DualView::of_number(v));
        break;
      }
      case 2: {  // float64
        need(8, i);
        double v;
        std::memcpy(&v, p, 8);
        p += 8;
        b.append(DualView::of_number(finite(v, i)));
        break;
      }
      case 4:  // text
        b.append(DualView::of_text(read_text(p, end, where, i)));
        break;
      case 5: {  // int32 and text
        need(4, i);
        std::int32_t v;
        std::memcpy(&v, p, 4);
        p += 4;
        b.append(DualView::of_dual(v, read_text(p, end, where, i)));
        break;
      }
      case 6: {  // float64 and text
        need(8, i);
        double v;
        std::memcpy(&v, p, 8);
        p += 8;
        b.append(DualView::of_dual(finite(v, i), read_text(p, end, where, i)));
        break;
      }
      default:
        fail_qvd(where + ": symbol " + std::to_string(i) + " has the unknown type byte " + std::to_string(type));
    }
  }
  if (p != end)
    fail_qvd(where + ": " + std::to_string(end - p) + " bytes of its Length are left after its " +
         std::to_string(f.n_symbols) + " symbols");
  return b.finish();
}

// True when two of the keys key(0) … key(n-1) may be equal: keys that are equal for one value
// must be, others rarely are (hashes), so a true answer is checked exactly by the caller.
// Large sets are split by their top bits into parts of about a thousand keys (a part's table
// stays in the L1 cache), in parallel.
template <class Key>
bool keys_may_repeat(std::size_t n, const Key& key, CpuAccount* cpu) {
  // Open addressing over `count` keys from `at`; a key is stored with its lowest bit set, so
  // that 0 marks an empty slot (two keys differing only there count as a repeat).
  const auto repeats_in = [](const std::uint64_t* at, std::size_t count, std::vector<std::uint64_t>& slots,
                             unsigned shift) {
    std::size_t cap = 16;
    while (cap < 2 * count) cap <<= 1;
    slots.assign(cap, 0);
    const std::size_t mask = cap - 1;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t k = at[i] | 1;
      std::size_t s = (k >> shift) & mask;
      for (; slots[s] != 0; s = (s + 1) & mask)
        if (slots[s] == k) return true;
      slots[s] = k;
    }
    return false;
  };
  std::vector<std::uint64_t, CallocAllocator<std::uint64_t>> keys, parted;
  {
    big_blocks::Uncleared every_element_is_written_below;
    keys.resize(n);
    parted.resize(n);
  }
  unsigned bits = 0;
  while ((n >> bits) > 1024 && bits < 16) ++bits;
  const std::size_t parts = std::size_t{1} << bits;
  const unsigned top = 64 - bits;
  const auto part_of = [&](std::uint64_t k) { return bits == 0 ? std::size_t{0} : static_cast<std::size_t>(k >> top); };
  const std::size_t n_chunks = std::min<std::size_t>(8, std::max<std::size_t>(1, n >> 16));
  const auto chunk_begin = [&](std::size_t c) { return n * c / n_chunks; };
  std::vector<std::vector<std::size_t>> at(n_chunks, std::vector<std::size_t>(parts, 0));
  parallel_for(
      n_chunks,
      [&](std::size_t c) {
        std::vector<std::size_t>& counts = at[c];
        for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) {
          keys[i] = key(i);
          ++counts[part_of(keys[i])];
        }
      },
      cpu);
  // Each chunk's place in each part: parts one after the other, chunks in order within one.
  std::vector<std::size_t> part_start(parts + 1, 0);
  std::size_t total = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    part_start[p] = total;
    for (std::size_t c = 0; c < n_chunks; ++c) {
      const std::size_t count = at[c][p];
      at[c][p] = total;
      total += count;
    }
  }
  part_start[parts] = total;
  parallel_for(
      n_chunks,
      [&](std::size_t c) {
        std::vector<std::size_t>& next = at[c];
        for (std::size_t i = chunk_begin(c), e = chunk_begin(c + 1); i < e; ++i) parted[next[part_of(keys[i])]++] = keys[i];
      },
      cpu);
  std::atomic<bool> repeat{false};
  const std::size_t n_tasks = std::min<std::size_t>(parts, 8);
  parallel_for(
      n_tasks,
      [&](std::size_t task) {
        std::vector<std::uint64_t> slots;
        for (std::size_t p = parts * task / n_tasks, e = parts * (task + 1) / n_tasks; p < e; ++p) {
          if (repeat.load(std::memory_order_relaxed)) return;
          if (repeats_in(parted.data() + part_start[p], part_start[p + 1] - part_start[p], slots, 1))
            repeat.store(true, std::memory_order_relaxed);
        }
      },
      cpu);
  return repeat.load();
}

// Keys that meet in a KeyBitmap, which folds them onto its size (4 bits a symbol, more when the
// first symbols spread wider), may still be distinct: values spread wider than that (amounts
// in cents, ids drawn from a larger set) fold onto one another. Over their own range [lo, hi],
// when it is below kMaxBitsPerSymbol bits a symbol (the bitmap half the size of the symbols'
// numbers), a bitmap tells them apart exactly and with no hash. True when key_of(0) … key_of(n-1), each in [lo, hi], are proven distinct there.
template <class KeyOf>
bool distinct_over_range(std::size_t n, std::uint64_t lo, std::uint64_t hi, const KeyOf& key_of) {
  if (hi < lo || hi - lo >= kMaxBitsPerSymbol * n) return false;
  std::vector<std::uint64_t> words((hi - lo) / 64 + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t k = key_of(i) - lo;
    words[k >> 6] |= std::uint64_t{1} << (k & 63);
  }
  return count_bits(words.data(), words.size()) == n;
}

// Whether a table's symbols may hold one value twice; false means they are distinct.
// Numbers take one pass that proves most of them distinct (unless the reader's own loops
// already took it: `proof` kKeysMet): ints that increase or whose values do not meet in a
// KeyBitmap, other numbers through NumberKeys. The rest, and texts, take a hash of each symbol.
bool symbols_may_repeat(const SymbolTable& t, Proof proof, CpuAccount* cpu) {
  const std::uint32_t n = t.size();
  if (n < 2 || t.is_int_range()) return false;
  const IntArray& ints = t.int_numbers();
  if (!ints.empty()) {
    std::size_t not_up = 0;  // a count without an exit vectorises
    for (std::uint32_t i = 1; i < n; ++i) not_up += ints[i] <= ints[i - 1];
    if (not_up == 0) return false;
    // Over the values' own range when it is narrow enough; else folded into a KeyBitmap.
    std::int32_t low = ints[0], high = ints[0];
    for (std::uint32_t i = 1; i < n; ++i) {
      low = std::min(low, ints[i]);
      high = std::max(high, ints[i]);
    }
    const auto offset = [&](std::int32_t v) {
      return static_cast<std::uint64_t>(std::int64_t{v} - std::numeric_limits<std::int32_t>::min());
    };
    if (offset(high) - offset(low) < kMaxBitsPerSymbol * n)  // exact: two values met only if one
      return !distinct_over_range(n, offset(low), offset(high), [&](std::size_t i) { return offset(ints[i]); });
    KeyBitmap seen(n);
    std::uint64_t met = 0;
    for (std::uint32_t i = 0; i < n; ++i) seen.add(static_cast<std::uint32_t>(ints[i]), met);
    if (met == 0) return false;
    return keys_may_repeat(n, [&](std::size_t i) { return mix64(static_cast<std::uint32_t>(ints[i])); }, cpu);
  }
  const NumberArray& numbers = t.double_numbers();
  if (t.all_numeric()) {
    const double scale = NumberKeys::scale_for(numbers.data(), std::min<std::size_t>(n, NumberKeys::kScaleSample));
    if (proof != Proof::kKeysMet) {
      NumberKeys keys(n);
      keys.set_scale(scale, numbers.data(), std::min<std::size_t>(n, NumberKeys::kScaleSample));
      for (std::uint32_t i = 0; i < n; ++i) keys.add(numbers[i]);
      if (keys.distinct()) return false;
    }
    // Over the keys' own range (the first symbols may not have shown all of it).
    double low = numbers[0], high = numbers[0];
    for (std::uint32_t i = 1; i < n; ++i) {
      low = numbers[i] < low ? numbers[i] : low;
      high = numbers[i] > high ? numbers[i] : high;
    }
    if (std::fabs(low * scale) < NumberKeys::kKeyed && std::fabs(high * scale) < NumberKeys::kKeyed &&
        distinct_over_range(n, NumberKeys::key(low, scale), NumberKeys::key(high, scale),
                            [&](std::size_t i) { return NumberKeys::key(numbers[i], scale); }))
      return false;
    return keys_may_repeat(n, [&](std::size_t i) { return mix64(number_key(numbers[i])); }, cpu);
  }
  // Symbols with a number are one value when their numbers are; pure texts when their texts
  // are. A number's key may meet a text's hash: the exact check then finds no repeat.
  return keys_may_repeat(
      n,
      [&](std::size_t i) {
        const auto s = static_cast<std::uint32_t>(i);
        if (t.has_number(s)) return mix64(number_key(t.number(s)));
        const std::string_view text = t.text(s);
        return hash_text(text.data(), text.size());
      },
      cpu);
}

}  // namespace

SymbolTable read_qvd_symbols(const FieldHeader& f, const std::uint8_t* data, std::vector<std::uint32_t>& merged,
                             CpuAccount* cpu) {
  Proof proof = Proof::kNone;
  std::optional<SymbolTable> plain = read_plain_symbols(f, data, proof, cpu);
  SymbolTable t = plain ? std::move(*plain) : read_any_symbols(f, data);
  merged.clear();
  if (proof == Proof::kDistinct || !symbols_may_repeat(t, proof, cpu)) return t;
  // Hashes that met: the exact merge, which may still find every value distinct.
  SymbolTableBuilder builder;
  builder.reserve(t.size());
  std::vector<std::uint32_t> remap(t.size());
  builder.intern_table(t, remap.data());
  if (builder.size() == t.size()) return t;
  merged = std::move(remap);
  return builder.finish();
}

}  // namespace assoc::detail
