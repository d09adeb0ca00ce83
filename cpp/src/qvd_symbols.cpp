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

#if defined(__x86_64__) && defined(__GNUC__)
#define ASSOC_X86_SIMD
// `n` int32 symbols (type byte 1, then 4 bytes) from q into out, four (20 bytes) a step: one
// 16-byte load holds the first three and the fourth's type byte, one shuffle gathers their
// values and another their type bytes. Returns non-zero when a type byte is not 1.
__attribute__((target("sse4.1"))) unsigned int32_symbols_sse41(const std::uint8_t* q, std::size_t n,
                                                              std::int32_t* out) {
  const __m128i values = _mm_setr_epi8(1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 14, -1, -1, -1, -1);
  const __m128i types = _mm_setr_epi8(0, 5, 10, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  unsigned bad = 0;
  std::size_t i = 0;
  // One by one up to a 16-byte boundary of `out`, where the streaming stores can start.
  for (; i < n && (reinterpret_cast<std::uintptr_t>(out + i) & 15) != 0; ++i, q += 5) {
    bad |= q[0] ^ 1U;
    std::memcpy(&out[i], q + 1, 4);
  }
  for (; i + 4 <= n; i += 4, q += 20) {
    if ((i & 63) == 0) prefetch_ahead(q, 320);  // the hardware prefetcher stops at each page
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    std::int32_t fourth;
    std::memcpy(&fourth, q + 16, 4);
    // Streamed past the caches: the array is written whole and read much later, and a
    // plain store would first read each line it fills.
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), _mm_insert_epi32(_mm_shuffle_epi8(a, values), fourth, 3));
    bad |= static_cast<unsigned>(_mm_cvtsi128_si32(_mm_shuffle_epi8(a, types))) ^ 0x01010101U;
  }
  for (; i < n; ++i, q += 5) {
    bad |= q[0] ^ 1U;
    std::memcpy(&out[i], q + 1, 4);
  }
  _mm_sfence();  // the streamed stores are seen before the task is done
  return bad;
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
// the `end` and `n` left and all its type bytes are 2; q moves past them, `ok` turns false
// at a number that is not finite, and the next symbol's index is returned. Per run: two
// 32-byte loads and a byte compare check the eight type bytes at once; the numbers are
// gathered four to a vector, checked finite as a vector and stored whole.
__attribute__((target("avx2"))) std::size_t float64_runs_avx2(const std::uint8_t*& q, const std::uint8_t* end,
                                                             double* out, std::size_t i, std::size_t n, bool& ok) {
  const __m256i two = _mm256_set1_epi8(2);
  const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m256d largest = _mm256_set1_pd(std::numeric_limits<double>::max());
  const std::uint8_t* r = q;
  int finite = 0xF;
  while (end - r >= 72 && n - i >= 8) {
    prefetch_ahead(r, 128);
    const auto lo = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)), two)));
    const auto hi = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32)), two)));
    // Type bytes at 0, 9, 18, 27 of the first 32 bytes, 36, 45, 54, 63 (4, 13, 22, 31) of the next.
    if ((lo & 0x08040201U) != 0x08040201U || (hi & 0x80402010U) != 0x80402010U) break;
    double d[8];
    for (int k = 0; k < 8; ++k) std::memcpy(&d[k], r + 9 * k + 1, 8);
    const __m256d a = _mm256_setr_pd(d[0], d[1], d[2], d[3]);
    const __m256d b = _mm256_setr_pd(d[4], d[5], d[6], d[7]);
    for (int k = 0; k < 8; ++k) stream_number(out + i + k, d[k]);
    finite &= _mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(a, magnitude), largest, _CMP_LE_OQ));
    finite &= _mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(b, magnitude), largest, _CMP_LE_OQ));
    r += 72;
    i += 8;
  }
  q = r;
  if (finite != 0xF) ok = false;
  return i;
}
const bool kHasAvx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
#endif

// A section of symbols that all have type `Type` (1: int32, 2: float64) at a fixed stride,
// parsed in parallel chunks straight into the table's array; nothing when a symbol has
// another type (or, for float64, is not finite).
template <class T, std::uint8_t Type>
std::optional<SymbolTable> read_fixed_symbols(const std::uint8_t* p, std::size_t n, CpuAccount* cpu) {
  constexpr std::size_t kStride = 1 + sizeof(T);
  constexpr std::size_t kMinChunk = std::size_t{1} << 16;
  std::vector<T, CallocAllocator<T>> values;
  {
    big_blocks::Uncleared every_element_is_written_below;
    values.resize(n);
  }
  std::atomic<bool> other{false};
  parallel_ranges(
      n, 1,
      [&](std::size_t begin, std::size_t end) {
        const std::uint8_t* q = p + kStride * begin;
        T* out = values.data();
        unsigned bad = 0;  // a loop without an exit: no branch per symbol
#ifdef ASSOC_X86_SIMD
        if constexpr (std::is_same_v<T, std::int32_t>) {
          if (kHasSse41) {
            if (int32_symbols_sse41(q, end - begin, out + begin)) other.store(true, std::memory_order_relaxed);
            return;
          }
        }
#endif
        for (std::size_t i = begin; i < end; ++i, q += kStride) {
          bad |= q[0] ^ Type;
          std::memcpy(&out[i], q + 1, sizeof(T));
          if constexpr (std::is_floating_point_v<T>) bad |= !(std::fabs(out[i]) <= std::numeric_limits<T>::max());
        }
        if (bad) other.store(true, std::memory_order_relaxed);
      },
      cpu, kMinChunk);
  if (other.load()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    return SymbolTable::of_numbers(std::move(values), /*all_finite=*/true);  // checked above
  } else {
    return SymbolTable::of_ints(std::move(values));
  }
}

// Fields whose symbols are all int32, all float64 or all text (the common case) are read by
// tight loops straight into the table's arrays. Anything else, or anything wrong, returns
// nothing and takes the general path, which also names the exact problem.
std::optional<SymbolTable> read_plain_symbols(const FieldHeader& f, const std::uint8_t* data, CpuAccount* cpu) {
  const std::uint8_t* const p = data + f.offset;
  const auto n = static_cast<std::size_t>(f.n_symbols);
  const auto length = static_cast<std::size_t>(f.length);
  if (n == 0 || length == 0) return std::nullopt;
  switch (p[0]) {
    case 1:
    case 2: {
      if (p[0] == 1 && length == 5 * n) {
        if (auto t = read_fixed_symbols<std::int32_t, 1>(p, n, cpu)) return t;
      } else if (p[0] == 2 && length == 9 * n) {
        if (auto t = read_fixed_symbols<double, 2>(p, n, cpu)) return t;
      }
      // Numbers: float64, with int32 where a value is an integer (as Qlik writes them), parsed
      // straight into the table's array.
      NumberArray numbers;
      {
        big_blocks::Uncleared every_element_is_written_below;  // or the table is dropped
        numbers.resize(n);
      }
      double* out = numbers.data();
#ifdef ASSOC_X86_SIMD
      // Numbers are streamed past the caches (the runs, and the single ones beside them, so
      // that no line mixes both kinds of store); fenced on every way out.
      const StreamFence fence;
      const auto put = [](double* at, double v) { stream_number(at, v); };
#else
      const auto put = [](double* at, double v) { *at = v; };
#endif
      const std::uint8_t* q = p;
      const std::uint8_t* const end = p + length;
      bool ok = true;
      std::size_t i = 0;
      // Runs of eight float64 symbols are checked with one branch (the common case).
      const auto run_fits = [&] { return end - q >= 72 && n - i >= 8; };
      for (; i < n; ++i) {
#ifdef ASSOC_X86_SIMD
        if (kHasAvx2) i = float64_runs_avx2(q, end, out, i, n, ok);
#endif
        while (run_fits()) {
          prefetch_ahead(q, 128);  // the 72 bytes of a run, a few pages ahead
          unsigned types = 0;
          for (std::size_t k = 0; k < 8; ++k) types |= q[9 * k] ^ 2U;
          if (types) break;
          for (std::size_t k = 0; k < 8; ++k) {
            std::memcpy(&out[i + k], q + 9 * k + 1, 8);
            ok &= std::fabs(out[i + k]) <= std::numeric_limits<double>::max();
          }
          q += 72;
          i += 8;
        }
        if (i == n) break;
        if (end - q >= 9 && *q == 2) {
          double v;
          std::memcpy(&v, q + 1, 8);
          ok &= std::isfinite(v);
          put(&out[i], v);
          q += 9;
        } else if (end - q >= 5 && *q == 1) {
          std::int32_t v;
          std::memcpy(&v, q + 1, 4);
          put(&out[i], v);
          q += 5;
        } else {
          return std::nullopt;
        }
      }
      if (!ok || q != end) return std::nullopt;
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

}  // namespace

SymbolTable read_qvd_symbols(const FieldHeader& f, const std::uint8_t* data, CpuAccount* cpu) {
  if (auto plain = read_plain_symbols(f, data, cpu)) return std::move(*plain);
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

}  // namespace assoc::detail
