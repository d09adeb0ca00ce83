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
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/utf8.hpp"
#include "qvd_number_keys.hpp"
#include "qvd_symbol_kernels.hpp"

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
