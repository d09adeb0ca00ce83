// The fused pass of hypercube aggregation: see hypercube_fused.hpp.
#include "hypercube_fused.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "assoc/packed_index.hpp"
#include "row_compress.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace assoc::detail {
namespace {

// The fused pass of a table whose records each reach one tuple through one column (or through
// several dimensions of the table): the column's stored code maps straight to a slot (a
// dimension's code, or a link's look-up of the tuple beyond it), and every term is a Sum (a
// number per stored code), a Count, a Min or a Max (a number per stored code, ±inf where none
// is), or an Avg (a Sum and a Count). One pass over the possible rows, word by word of the row
// set (empty words skipped): per row, its codes read in place, a slot look-up and a number
// look-up added into the slot; no per-row branch on NULL (its stored code has an entry of its
// own).

// A packed column's stored codes, row by row: the symbol index + 1 when NULL has a code (0),
// else the symbol index. Held in locals, so a loop keeps them in registers.
struct CodeReader {
  const std::uint8_t* data = nullptr;
  std::uint64_t mask = 0;
  std::uint32_t width = 0;
  std::uint32_t bias = 0;

  explicit CodeReader(const PackedIndex& index) : width(index.bit_width()), bias(index.has_null() ? 1U : 0U) {
    static const std::uint8_t zeros[8] = {};
    data = width == 0 ? zeros : index.data();  // width 0: every row reads code 0 at bit 0
    mask = (std::uint64_t{1} << width) - 1;
  }
  std::uint32_t at(std::size_t row) const {
    const std::size_t bit = row * width;
    std::uint64_t x;
    std::memcpy(&x, data + (bit >> 3), sizeof x);
    return static_cast<std::uint32_t>((x >> (bit & 7)) & mask);
  }
};

struct FusedTerm {
  const PackedIndex* index = nullptr;
  CodeReader codes;
  // Sum, Avg: per stored code (0 for NULL and texts); Min, Max: the same with +inf (Min) or
  // -inf (Max) for NULL and texts; Count: null
  const double* values = nullptr;
  bool avg = false;  // Avg of a column of numbers only: its Sum and Count, divided at the end
  int extreme = 0;   // Min: -1, Max: +1 (the slot keeps the least or the greatest number)
  std::vector<double> own;  // the values, when built for this pass
  std::size_t n_numbers = 0;  // of `values` (the column's symbols)
};

// A row's number kept in its slot's extreme: the least (`extreme` -1, Min) or the greatest (+1,
// Max); NULL and texts read ±inf, which no number passes.
inline void keep_extreme(double& e, double x, int extreme) { e = extreme < 0 ? std::min(e, x) : std::max(e, x); }

// Whether a chunk with `n` of its `count` rows possible has its codes decoded block by block
// (shifts fixed per width) and the possible rows' packed, rather than read row by row: from a
// quarter of the rows when a dimension's slot is its symbol (`affine`), from half when each
// row's slot is looked up (a link's), whose look-ups the row-by-row pass overlaps better, from
// an eighth with several dimensions (`several`: row by row, each row reads each dimension's
// column and looks its part up; decoded, the slots are arithmetic), and from a sixteenth where
// a slot is its symbol and a term's numbers miss the second-level cache (`far`: row by row,
// each row waits for its number; decoded, numbers are asked for ahead, number_ahead).
constexpr bool dense_chunk(std::size_t n, std::size_t count, bool affine, bool several, bool far) {
  if (affine && far && !several) return n * 16 >= count;
  return n * 8 >= count * (several ? 1 : affine ? 2 : 4);
}

// A column's numbers that fill more than half of the second-level cache (an amount of
// 100,000 values: 800 KB) miss it at random, and a row's add waits for its number: the number
// kValueAhead rows on is asked for first. Their codes are room enough past the batch's rows
// (ChunkCodes); a prefetch of any address, even one read from a stale code, is harmless.
constexpr std::size_t kValueAhead = 24;

inline void number_ahead(const double* values, const std::uint32_t* code, std::size_t i) {
  __builtin_prefetch(values + static_cast<std::int32_t>(code[i + kValueAhead]), 0, 3);
}

bool numbers_beyond_cache(std::size_t n_numbers) {
  static const std::size_t half = [] {
    long l2 = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return l2 > 0 ? static_cast<std::size_t>(l2) / 2 : std::size_t{256} << 10;  // unknown: 512 KB
  }();
  return n_numbers * sizeof(double) > half;
}

// Per-thread room for one chunk's codes.
struct ChunkCodes {
  std::vector<std::uint32_t> slot = std::vector<std::uint32_t>(kBatch);
  std::vector<std::uint32_t> code = std::vector<std::uint32_t>(kBatch + kValueAhead);
  std::vector<std::uint32_t> decoded = std::vector<std::uint32_t>(kBatch);
};

// The dimensions of the table after the first, when it has several (and no link): a row's slot
// is the first's slot_of entry plus each one's `add` entry of its stored code (the value, symbol
// index + 1 or 0 for NULL, times the dimension's stride).
struct ExtraDims {
  struct Dim {
    const PackedIndex* index = nullptr;
    CodeReader codes;
    std::uint32_t stride = 0;
    std::vector<std::uint32_t> add;  // per stored code
  };
  std::vector<Dim> dims;
  std::uint32_t first_stride = 0;  // the first dimension's

  bool empty() const { return dims.empty(); }
  std::uint32_t at(std::size_t row) const {
    std::uint32_t s = 0;
    for (const Dim& d : dims) s += d.add[d.codes.at(row)];
    return s;
  }
  void prefetch(std::size_t begin, std::size_t count) const {
    for (const Dim& d : dims) d.index->prefetch(begin, count);
  }
  // The slots of rows [begin, begin+count), whose first dimension's symbol indexes are
  // `decoded`, decoding each further column into `scratch`: kFirstGroup plus each value (symbol
  // index + 1, kNull wrapping to 0) times its stride, with no look-up.
  void slots(const std::uint32_t* decoded, std::size_t begin, std::size_t count, std::uint32_t* slot,
             std::uint32_t* scratch) const;
};

// A dimension's slot as an affine function of its symbol index (`affine`: one dimension of
// the root table and no link): kFirstGroup + 1 + symbol, NULL (kNull) wrapping to
// kFirstGroup, as its slot map says; otherwise the map is read.
constexpr std::uint32_t kAffineSlot = kFirstGroup + 1;

// The slots of a chunk's rows whose codes are decoded (`decoded`, symbol indexes), the rows of
// the chunk's words only (`n` of them), packed to the front; how many. Further dimensions'
// columns are decoded into `scratch`.
template <class Map>
std::size_t chunk_slots(const std::uint64_t* words, std::size_t begin, std::size_t count, std::size_t n,
                        const std::uint32_t* decoded, CodeReader slot_codes, const Map* slot_of, bool affine,
                        const ExtraDims& extra, std::uint32_t* scratch, std::uint32_t* slot) {
  if (!extra.empty()) {  // every row's slot, then the possible rows' packed once
    extra.slots(decoded, begin, count, slot, scratch);
    return n == count ? count : compress_rows(words, count, slot, slot);
  }
  if (n == count) {  // every row: no gaps to close
    if (affine) {
      for (std::size_t j = 0; j < count; ++j) slot[j] = decoded[j] + kAffineSlot;
    } else {
      for (std::size_t j = 0; j < count; ++j) slot[j] = slot_of[decoded[j] + slot_codes.bias];
    }
    return count;
  }
  const std::size_t m = compress_rows(words, count, decoded, slot);
  if (affine) {
    for (std::size_t i = 0; i < m; ++i) slot[i] += kAffineSlot;
  } else {
    for (std::size_t i = 0; i < m; ++i) slot[i] = slot_of[slot[i] + slot_codes.bias];
  }
  return m;
}

// The same rows' codes of a term, decoded, packed to the front in place.
inline void pack_rows(const std::uint64_t* words, std::size_t count, std::size_t n, std::uint32_t* code) {
  if (n != count) compress_rows(words, count, code, code);
}

void ExtraDims::slots(const std::uint32_t* decoded, std::size_t begin, std::size_t count, std::uint32_t* slot,
                      std::uint32_t* scratch) const {
  const std::uint32_t first = first_stride;
  for (std::size_t i = 0; i < count; ++i) slot[i] = kFirstGroup + (decoded[i] + 1) * first;
  for (const Dim& d : dims) {
    d.index->decode(begin, count, scratch);
    const std::uint32_t stride = d.stride;
    for (std::size_t i = 0; i < count; ++i) slot[i] += (scratch[i] + 1) * stride;
  }
}

// A chunk's possible rows one by one into several terms (Sums, Counts, Avgs, Mins, Maxes), where
// the table gives several dimensions (`extra`: a row's slot is summed from each one's column);
// with one, terms_sparse.
template <class Map>
void terms_chunk(const std::uint64_t* words, std::size_t n_words, std::size_t begin, CodeReader slot_codes,
                 const Map* slot_of, const ExtraDims& extra, const std::vector<FusedTerm>& fts, double* const* sums,
                 std::uint64_t* const* counts, double* const* extremes, std::uint8_t* hits) {
  const std::size_t n_terms = fts.size();
  for (std::size_t w = 0; w < n_words; ++w) {
    const std::size_t base = begin + w * 64;
    for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
      const std::size_t row = base + static_cast<std::size_t>(std::countr_zero(bits));
      const std::size_t s = slot_of[slot_codes.at(row)] + extra.at(row);
      hits[s] = 1;
      for (std::size_t k = 0; k < n_terms; ++k) {
        const std::uint32_t c = fts[k].codes.at(row);
        if (sums[k] != nullptr) sums[k][s] += fts[k].values[c];
        if (counts[k] != nullptr) counts[k][s] += c >= fts[k].codes.bias ? 1U : 0U;
        if (extremes[k] != nullptr) keep_extreme(extremes[k][s], fts[k].values[c], fts[k].extreme);
      }
    }
  }
}

// A Sum and a Count among the terms that terms_dense adds into one pair of numbers per slot:
// a Sum and a Count of one column next to each other (a bar chart's), else a Sum and a Count of
// a column that stores no NULL (which counts every row, whatever the Sum's column holds); their
// positions, none when no two are.
struct SumCount {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t sum = kNone;
  std::size_t count = kNone;
  bool every_row = false;  // the Count counts every row, NULL in the Sum's column or not
  bool found() const { return sum != kNone; }
};

inline SumCount sum_count_pair(const std::vector<FusedTerm>& fts) {
  for (std::size_t k = 0; k + 1 < fts.size(); ++k)
    if (fts[k].index == fts[k + 1].index && !fts[k].avg && !fts[k + 1].avg && fts[k].extreme == 0 &&
        fts[k + 1].extreme == 0 &&
        (fts[k].values != nullptr) != (fts[k + 1].values != nullptr)) {
      const bool every_row = !fts[k].index->has_null();
      return fts[k].values != nullptr ? SumCount{k, k + 1, every_row} : SumCount{k + 1, k, every_row};
    }
  SumCount pair;
  for (std::size_t k = 0; k < fts.size(); ++k) {
    if (fts[k].values != nullptr && !fts[k].avg && fts[k].extreme == 0 && pair.sum == SumCount::kNone) pair.sum = k;
    if (fts[k].values == nullptr && !fts[k].index->has_null() && pair.count == SumCount::kNone) pair.count = k;
  }
  if (pair.sum == SumCount::kNone || pair.count == SumCount::kNone) return {};
  pair.every_row = true;
  return pair;
}

// A row's number and its 1 (with `Nullable`, 0 for NULL) added to its slot's pair (at `at`),
// one load and one store; NULL's code kNull wraps `values` to the 0 before it.
template <bool Nullable>
inline void add_pair(double* at, const double* values, std::uint32_t c) {
  double one = 1.0;
  if constexpr (Nullable) one = c != kNull ? 1.0 : 0.0;
#if defined(__SSE2__)
  _mm_storeu_pd(at, _mm_add_pd(_mm_loadu_pd(at), _mm_set_pd(one, values[static_cast<std::int32_t>(c)])));
#else
  at[0] += values[static_cast<std::int32_t>(c)];
  at[1] += one;
#endif
}

// Where a dimension has this many slots or fewer, the dense pass keeps its sums and counts in
// four copies, a row to each in turn: with one copy, rows of the same slot follow each other
// closely and each waits for the one before (its store, then its load): a Sum and Count by a
// 2-value dimension 2.5x slower, two Sums 4x.
constexpr std::size_t kFewSlots = 64;
constexpr std::size_t kCopies = 4;

// Calls add(i, copy) for rows [0, m), the copies taken in turn, `Copies` rows at a time.
template <std::size_t Copies, class Add>
inline void rows_in_turn(std::size_t m, Add add) {
  std::size_t i = 0;
  if constexpr (Copies > 1) {
    for (; i + Copies <= m; i += Copies)
      for (std::size_t l = 0; l < Copies; ++l) add(i + l, l);
  }
  for (; i < m; ++i) add(i, 0);
}

// A Sum and a Count (SumCount) over `m` rows into their slots' pairs, `Copies` copies of them
// `stride` slots apart. These loops are functions of their own so that their pointers stay in
// registers.
template <bool Nullable, std::size_t Copies, bool Ahead>
void add_pairs(const std::uint32_t* __restrict slot, std::uint32_t slot_add, const std::uint32_t* __restrict code,
               std::size_t m, const double* __restrict values, double* __restrict pair, std::size_t stride) {
  rows_in_turn<Copies>(m, [&](std::size_t i, std::size_t l) {
    if constexpr (Ahead) number_ahead(values, code, i);
    add_pair<Nullable>(pair + 2 * (l * stride + std::uint32_t{slot[i] + slot_add}), values, code[i]);
  });
}

// A Sum over `m` rows: each row's number (by symbol index; NULL's kNull wraps `values` to the
// 0 before it) added to its slot.
template <std::size_t Copies, bool Ahead>
void add_sums(const std::uint32_t* __restrict slot, std::uint32_t slot_add, const std::uint32_t* __restrict code,
              std::size_t m, const double* __restrict values, double* __restrict sum, std::size_t stride) {
  rows_in_turn<Copies>(m, [&](std::size_t i, std::size_t l) {
    if constexpr (Ahead) number_ahead(values, code, i);
    sum[l * stride + std::uint32_t{slot[i] + slot_add}] += values[static_cast<std::int32_t>(code[i])];
  });
}

// A Count over `m` rows: each row that is not NULL adds 1 to its slot (every row, without
// `Nullable`: `code` is not read).
template <bool Nullable, std::size_t Copies>
void add_counts(const std::uint32_t* __restrict slot, std::uint32_t slot_add, const std::uint32_t* __restrict code,
                std::size_t m, std::uint64_t* __restrict count, std::size_t stride) {
  rows_in_turn<Copies>(m, [&](std::size_t i, std::size_t l) {
    if constexpr (Nullable) {
      count[l * stride + std::uint32_t{slot[i] + slot_add}] += code[i] != kNull ? 1U : 0U;
    } else {
      ++count[l * stride + std::uint32_t{slot[i] + slot_add}];
    }
  });
}

// A Min (`Max` false) or a Max over `m` rows: each row's number (by symbol index; NULL's kNull
// wraps `values` to the ±inf before the first) kept in its slot.
template <bool Max>
void add_extremes(const std::uint32_t* __restrict slot, std::uint32_t slot_add, const std::uint32_t* __restrict code,
                  std::size_t m, const double* __restrict values, double* __restrict out) {
  for (std::size_t i = 0; i < m; ++i) {
    double& e = out[std::uint32_t{slot[i] + slot_add}];
    const double x = values[static_cast<std::int32_t>(code[i])];
    e = Max ? std::max(e, x) : std::min(e, x);
  }
}

// The slots of a chunk's possible rows (bit j of word w: row begin + 64w + j), one dimension
// of the table: each row's key read in turn (row(i, offset) is told the i-th row's offset from
// `begin`), then the keys turned into slots in a loop of look-ups alone, which wait on no row's
// bits, so many are under way at once (a star's slot table is in the second-level cache at
// best). Returns the rows' count.
template <class Map, class Row>
std::size_t sparse_slots(const std::uint64_t* words, std::size_t n_words, std::size_t begin, CodeReader slot_codes,
                         const Map* slot_of, std::uint32_t* slot, Row row) {
  std::size_t m = 0;
  for (std::size_t w = 0; w < n_words; ++w) {
    for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1, ++m) {
      const std::size_t at = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      slot[m] = slot_codes.at(begin + at);
      row(m, at);
    }
  }
  for (std::size_t i = 0; i < m; ++i) slot[i] = slot_of[slot[i]];
  return m;
}

// The rows of a chunk's row words (bit j of word w: row begin + 64w + j; `n` of them) into
// one Sum.
template <class Map>
void sum_chunk(const std::uint64_t* words, std::size_t begin, std::size_t count, std::size_t n,
               const PackedIndex& slot_index, CodeReader slot_codes, const Map* slot_of, bool affine,
               const ExtraDims& extra, const PackedIndex& index, CodeReader codes, const double* values,
               std::size_t n_numbers, double* sums, std::size_t lane, Hits& hits, ChunkCodes& buf) {
  // The codes first, then the numbers: the loop of look-ups is short, so many of them are
  // under way at once.
  std::uint32_t* code = buf.code.data();
  const std::size_t n_words = (count + 63) / 64;
  std::size_t m = 0;
  Slots slot{buf.slot.data(), 0};
  const bool far = numbers_beyond_cache(n_numbers);
  if (dense_chunk(n, count, affine, !extra.empty(), far)) {
    slot_index.prefetch(begin + 2 * kBatch, kBatch);  // the chunk after next
    extra.prefetch(begin + 2 * kBatch, kBatch);
    index.prefetch(begin + 2 * kBatch, kBatch);
    slot_index.decode(begin, count, buf.decoded.data());  // symbol indexes, kNull for NULL
    if (affine && n == count) {
      slot = Slots{buf.decoded.data(), kAffineSlot};
      m = count;
    } else {
      m = chunk_slots(words, begin, count, n, buf.decoded.data(), slot_codes, slot_of, affine, extra, code,
                      buf.slot.data());
    }
    index.decode(begin, count, code);  // symbol indexes, kNull for NULL
    pack_rows(words, count, n, code);
  } else if (extra.empty()) {
    m = sparse_slots(words, n_words, begin, slot_codes, slot_of, buf.slot.data(), [&](std::size_t i, std::size_t at) {
      code[i] = codes.at(begin + at) - codes.bias;  // the symbol index, kNull for NULL
    });
  } else {
    for (std::size_t w = 0; w < n_words; ++w) {
      const std::size_t base = begin + w * 64;
      for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1, ++m) {
        const std::size_t row = base + static_cast<std::size_t>(std::countr_zero(bits));
        buf.slot[m] = slot_of[slot_codes.at(row)] + extra.at(row);
        code[m] = codes.at(row) - codes.bias;  // the symbol index, kNull for NULL
      }
    }
  }
  hits.mark(slot, m);
  // By symbol index: NULL's kNull reads the number before the first (0, the stored code 0's).
  const double* number = values + codes.bias;
  if (far) {
    add_sums<kCopies, true>(slot.at, slot.add, code, m, number, sums, lane);
  } else {
    add_sums<kCopies, false>(slot.at, slot.add, code, m, number, sums, lane);
  }
}

// The terms of a chunk's `m` rows (their slots in `slot`) added into the dense pass's copies
// (DenseCopies): fill(term, code) puts the rows' symbol indexes (kNull for NULL) of a term's
// column in `code`, once for terms of one column.
template <std::size_t Copies, class Fill>
void add_terms(Slots slot, std::size_t m, const std::vector<FusedTerm>& fts, double* const* sums,
               std::uint64_t* const* counts, double* const* extremes, SumCount pair_of, double* const* pairs,
               std::size_t stride, std::uint32_t* code, Fill fill) {
  const PackedIndex* decoded = nullptr;  // the column whose codes `code` holds
  for (std::size_t k = 0; k < fts.size(); ++k) {
    if (k == pair_of.count) continue;  // added with its Sum
    if (extremes[k] == nullptr && sums[k] == nullptr && !fts[k].index->has_null()) {
      // A Count of a column that stores no NULL counts every row: its codes are not read.
      add_counts<false, Copies>(slot.at, slot.add, nullptr, m, counts[k], stride);
      continue;
    }
    if (fts[k].index != decoded) {  // terms of one column (Sum(X), Count(X)) read it once
      decoded = fts[k].index;
      fill(fts[k], code);
    }
    if (pairs[k] != nullptr) {
      // The SumCount's Sum, or an Avg: a row adds its number and its 1 to its slot's pair with
      // one load and one store.
      const double* values = fts[k].values + fts[k].codes.bias;  // NULL (kNull) wraps to 0
      const bool ahead = numbers_beyond_cache(fts[k].n_numbers);
      if (k == pair_of.sum ? pair_of.every_row : !fts[k].index->has_null()) {
        if (ahead) {
          add_pairs<false, Copies, true>(slot.at, slot.add, code, m, values, pairs[k], stride);
        } else {
          add_pairs<false, Copies, false>(slot.at, slot.add, code, m, values, pairs[k], stride);
        }
      } else if (ahead) {
        add_pairs<true, Copies, true>(slot.at, slot.add, code, m, values, pairs[k], stride);
      } else {
        add_pairs<true, Copies, false>(slot.at, slot.add, code, m, values, pairs[k], stride);
      }
    } else if (sums[k] != nullptr) {
      const double* values = fts[k].values + fts[k].codes.bias;
      if (numbers_beyond_cache(fts[k].n_numbers)) {
        add_sums<Copies, true>(slot.at, slot.add, code, m, values, sums[k], stride);
      } else {
        add_sums<Copies, false>(slot.at, slot.add, code, m, values, sums[k], stride);
      }
    } else if (extremes[k] != nullptr) {  // one copy: the thread's own
      const double* values = fts[k].values + fts[k].codes.bias;
      if (fts[k].extreme < 0) {
        add_extremes<false>(slot.at, slot.add, code, m, values, extremes[k]);
      } else {
        add_extremes<true>(slot.at, slot.add, code, m, values, extremes[k]);
      }
    } else {
      add_counts<true, Copies>(slot.at, slot.add, code, m, counts[k], stride);
    }
  }
}

// Sums and Counts of a chunk where many rows are possible (sum_chunk's for several terms):
// each column's codes decoded block by block (shifts fixed per width) rather than read row by
// row. Sums, counts and the pair go to `Copies` copies, `stride` slots apart (DenseCopies).
template <std::size_t Copies, class Map>
void terms_dense(const std::uint64_t* words, std::size_t begin, std::size_t count, std::size_t n,
                 const PackedIndex& slot_index, CodeReader slot_codes, const Map* slot_of, bool affine,
                 const ExtraDims& extra, const std::vector<FusedTerm>& fts, double* const* sums,
                 std::uint64_t* const* counts, double* const* extremes, Hits& hits, ChunkCodes& buf, SumCount pair_of,
                 double* const* pairs, std::size_t stride) {
  std::uint32_t* code = buf.code.data();
  slot_index.prefetch(begin + 2 * kBatch, kBatch);  // the chunk after next (PackedIndex::prefetch)
  extra.prefetch(begin + 2 * kBatch, kBatch);
  for (const FusedTerm& f : fts) f.index->prefetch(begin + 2 * kBatch, kBatch);
  slot_index.decode(begin, count, buf.decoded.data());  // symbol indexes, kNull for NULL
  Slots slot{buf.decoded.data(), kAffineSlot};
  std::size_t m = count;
  if (!affine || n != count) {
    slot = Slots{buf.slot.data(), 0};
    m = chunk_slots(words, begin, count, n, buf.decoded.data(), slot_codes, slot_of, affine, extra, code,
                    buf.slot.data());
  }
  hits.mark(slot, m);
  add_terms<Copies>(slot, m, fts, sums, counts, extremes, pair_of, pairs, stride, code,
                    [&](const FusedTerm& f, std::uint32_t* out) {
                      f.index->decode(begin, count, out);
                      pack_rows(words, count, n, out);
                    });
}

// The same where few rows of the chunk are possible (one dimension of its own table): the
// possible rows' keys are read one by one, then turned into slots in a loop of look-ups alone,
// and each column's codes are read at the rows' positions.
template <std::size_t Copies, class Map>
void terms_sparse(const std::uint64_t* words, std::size_t n_words, std::size_t begin, CodeReader slot_codes,
                  const Map* slot_of, const std::vector<FusedTerm>& fts, double* const* sums,
                  std::uint64_t* const* counts, double* const* extremes, Hits& hits, ChunkCodes& buf, SumCount pair_of,
                  double* const* pairs, std::size_t stride) {
  std::uint32_t* position = buf.decoded.data();  // rows from `begin`
  const std::size_t m = sparse_slots(words, n_words, begin, slot_codes, slot_of, buf.slot.data(),
                                     [&](std::size_t i, std::size_t at) { position[i] = static_cast<std::uint32_t>(at); });
  const Slots slot{buf.slot.data(), 0};
  hits.mark(slot, m);
  add_terms<Copies>(slot, m, fts, sums, counts, extremes, pair_of, pairs, stride, buf.code.data(),
                    [&](const FusedTerm& f, std::uint32_t* out) {
                      const CodeReader codes = f.codes;
                      for (std::size_t i = 0; i < m; ++i) out[i] = codes.at(begin + position[i]) - codes.bias;
                    });
}

// A thread's sums, counts and pairs for the dense chunks: a pair (a sum and a count side by
// side) for the SumCount's Sum and for each Avg, and kCopies copies of everything where the
// slots are few (kFewSlots), else the terms' own accumulators for the rest; fold() adds them
// into the accumulators at the end (a pair's count as a double: exact below 2^53 rows).
struct DenseCopies {
  std::size_t copies = 1;
  std::size_t stride = 0;  // slots
  std::vector<double*> sums;
  std::vector<std::uint64_t*> counts;
  std::vector<double*> pairs;           // per term: its pair, or null
  std::vector<std::size_t> pair_count;  // per term with a pair: the term its count goes to
  std::vector<double> pair_room;
  std::vector<double> sum_room;
  std::vector<std::uint64_t> count_room;

  DenseCopies(std::size_t slots, const std::vector<FusedTerm>& fts, const std::vector<double*>& own_sums,
              const std::vector<std::uint64_t*>& own_counts, const SumCount& pair_of)
      : copies(slots <= kFewSlots ? kCopies : 1),
        stride(slots),
        sums(own_sums),
        counts(own_counts),
        pairs(fts.size(), nullptr),
        pair_count(fts.size(), SumCount::kNone) {
    const std::size_t n = fts.size();
    std::size_t n_pairs = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (k == pair_of.sum) pair_count[k] = pair_of.count;
      if (fts[k].avg) pair_count[k] = k;
      n_pairs += pair_count[k] != SumCount::kNone ? 1 : 0;
    }
    const std::size_t room = 2 * copies * slots;
    pair_room.assign(n_pairs * room, 0.0);
    for (std::size_t k = 0, at = 0; k < n; ++k)
      if (pair_count[k] != SumCount::kNone) pairs[k] = pair_room.data() + room * at++;
    if (copies == 1) return;
    sum_room.assign(n * copies * slots, 0.0);
    count_room.assign(n * copies * slots, 0);
    for (std::size_t k = 0; k < n; ++k) {
      if (sums[k] != nullptr) sums[k] = sum_room.data() + k * copies * slots;
      if (counts[k] != nullptr) counts[k] = count_room.data() + k * copies * slots;
    }
  }

  void fold(const std::vector<double*>& own_sums, const std::vector<std::uint64_t*>& own_counts) const {
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      if (pairs[k] == nullptr) continue;
      for (std::size_t x = 0; x < copies * stride; ++x) {
        own_sums[k][x % stride] += pairs[k][2 * x];
        own_counts[pair_count[k]][x % stride] += static_cast<std::uint64_t>(pairs[k][2 * x + 1]);
      }
    }
    if (copies == 1) return;
    for (std::size_t k = 0; k < own_sums.size(); ++k) {
      for (std::size_t x = 0; x < copies * stride; ++x) {
        if (own_sums[k] != nullptr) own_sums[k][x % stride] += sums[k][x];
        if (own_counts[k] != nullptr) own_counts[k][x % stride] += counts[k][x];
      }
    }
  }
};

// Sums and Counts over rows given by their positions from `begin` (the sparse path's batch):
// each row's reads are independent of the others', so many misses are under way at once.
template <class Map>
void terms_rows(std::size_t begin, const std::uint32_t* picked, std::size_t m, CodeReader slot_codes, const Map* slot_of,
                const ExtraDims& extra, const std::vector<FusedTerm>& fts, double* const* sums, std::uint64_t* const* counts,
                double* const* extremes, std::uint8_t* hits, ChunkCodes& buf) {
  std::uint32_t* slot = buf.slot.data();
  std::uint32_t* code = buf.code.data();
  for (std::size_t i = 0; i < m; ++i) slot[i] = slot_of[slot_codes.at(begin + picked[i])];
  if (!extra.empty())
    for (std::size_t i = 0; i < m; ++i) slot[i] += extra.at(begin + picked[i]);
  for (std::size_t i = 0; i < m; ++i) hits[slot[i]] = 1;
  for (std::size_t k = 0; k < fts.size(); ++k) {
    const CodeReader codes = fts[k].codes;
    for (std::size_t i = 0; i < m; ++i) code[i] = codes.at(begin + picked[i]);
    if (sums[k] != nullptr)
      for (std::size_t i = 0; i < m; ++i) sums[k][slot[i]] += fts[k].values[code[i]];
    if (counts[k] != nullptr)
      for (std::size_t i = 0; i < m; ++i) counts[k][slot[i]] += code[i] >= codes.bias ? 1U : 0U;
    if (extremes[k] != nullptr)
      for (std::size_t i = 0; i < m; ++i) keep_extreme(extremes[k][slot[i]], fts[k].values[code[i]], fts[k].extreme);
  }
}

// The fused pass over a table's possible rows (`possible` null: all), chunk by chunk on the
// engine's threads, each into its own accumulators. When few rows are possible (one customer
// of a thousand), a chunk holds a row or two: the rows' numbers are gathered from the row set
// over many chunks first, so the fixed work per chunk goes and their reads overlap.
template <class Map>
void fused_pass(std::size_t rows, const Bitset* possible, std::uint64_t n_possible, const PackedIndex& slot_index,
                const Map* slot_of, bool affine, const ExtraDims& extra, const std::vector<FusedTerm>& fts, const std::vector<TermInput>& in,
                std::vector<Accumulators>& per_thread, std::size_t slots, std::size_t reachable) {
  const std::size_t n_chunks = (rows + kBatch - 1) / kBatch;
  ChunkClaims claims(n_chunks, per_thread.size());
  const CodeReader slot_codes(slot_index);
  const bool sparse = sparse_rows(possible, n_possible, rows);
  const SumCount pair_of = sum_count_pair(fts);
  parallel_for(per_thread.size(), [&](std::size_t th) {
    Accumulators& a = per_thread[th];
    a.resize(in, slots);
    const std::size_t n_terms = fts.size();
    std::vector<double*> sums(n_terms, nullptr);
    std::vector<std::uint64_t*> counts(n_terms, nullptr);
    std::vector<double*> extremes(n_terms, nullptr);
    for (std::size_t k = 0; k < n_terms; ++k) {
      if (fts[k].extreme != 0) {
        extremes[k] = a.terms[k].a.data();
        continue;
      }
      if (fts[k].values != nullptr) sums[k] = a.terms[k].a.data();
      if (fts[k].values == nullptr || fts[k].avg) counts[k] = a.terms[k].n.data();
    }
    ChunkCodes buf;
    if (sparse) {
      std::vector<std::uint32_t> picked(kBatch);
      gather_rows(claims, *possible, rows, picked.data(), [&](std::size_t begin, std::size_t, const std::uint32_t* p, std::size_t n) {
        terms_rows(begin, p, n, slot_codes, slot_of, extra, fts, sums.data(), counts.data(), extremes.data(),
                   a.hits.data(), buf);
      });
      return;
    }
    // A Count (or an Avg) of a column that stores no NULL counts every row: the slots it counts
    // are those reached, so dense chunks mark none (several dimensions reach few of their slots,
    // and the marks would go on to the last row).
    std::size_t every_row = SumCount::kNone;
    for (std::size_t k = 0; k < n_terms; ++k)
      if (counts[k] != nullptr && !fts[k].index->has_null()) every_row = k;
    Hits hits{a.hits.data(), every_row != SumCount::kNone ? 0 : reachable};
    const bool one_sum = n_terms == 1 && !fts[0].avg && sums[0] != nullptr;
    // A Sum and a Count: each slot's sum and count side by side (the count as a double: exact
    // while below 2^53 rows), folded into the terms at the end with any copies.
    DenseCopies dense(slots, fts, sums, counts, pair_of);
    const bool far = std::any_of(fts.begin(), fts.end(), [](const FusedTerm& f) { return numbers_beyond_cache(f.n_numbers); });
    std::vector<double> lanes(one_sum ? 4 * slots : 0, 0.0);  // the four copies of one Sum
    std::uint64_t words[kBatch / 64];
    claims.each([&](std::size_t c) {
      const std::size_t begin = c * kBatch;
      const std::size_t count = std::min(kBatch, rows - begin);
      const std::size_t n_words = (count + 63) / 64;
      // The row set's words as they are, but for the last chunk's (rows past the table's
      // last are never read) and where every row is possible.
      const std::uint64_t* w = possible != nullptr ? possible->words() + begin / 64 : words;
      if (possible == nullptr || count % 64 != 0) {
        for (std::size_t i = 0; i < n_words; ++i) words[i] = possible != nullptr ? w[i] : ~std::uint64_t{0};
        if (count % 64 != 0) words[n_words - 1] &= (std::uint64_t{1} << (count % 64)) - 1;
        w = words;
      }
      if (one_sum) {
        const std::size_t n = count_bits(w, n_words);
        sum_chunk(w, begin, count, n, slot_index, slot_codes, slot_of, affine, extra, *fts[0].index, fts[0].codes,
                  fts[0].values, fts[0].n_numbers, lanes.data(), slots, hits, buf);
      } else {
        const std::size_t n = count_bits(w, n_words);
        if (dense_chunk(n, count, affine, !extra.empty(), far)) {
          if (dense.copies > 1) {
            terms_dense<kCopies>(w, begin, count, n, slot_index, slot_codes, slot_of, affine, extra, fts, dense.sums.data(),
                                 dense.counts.data(), extremes.data(), hits, buf, pair_of, dense.pairs.data(),
                                 dense.stride);
          } else {
            terms_dense<1>(w, begin, count, n, slot_index, slot_codes, slot_of, affine, extra, fts, dense.sums.data(),
                           dense.counts.data(), extremes.data(), hits, buf, pair_of, dense.pairs.data(),
                           dense.stride);
          }
        } else if (!extra.empty()) {
          terms_chunk(w, n_words, begin, slot_codes, slot_of, extra, fts, sums.data(), counts.data(), extremes.data(),
                      a.hits.data());
        } else if (dense.copies > 1) {
          terms_sparse<kCopies>(w, n_words, begin, slot_codes, slot_of, fts, dense.sums.data(), dense.counts.data(),
                                extremes.data(), hits, buf, pair_of, dense.pairs.data(), dense.stride);
        } else {
          terms_sparse<1>(w, n_words, begin, slot_codes, slot_of, fts, dense.sums.data(), dense.counts.data(),
                          extremes.data(), hits, buf, pair_of, dense.pairs.data(), dense.stride);
        }
      }
    });
    for (std::size_t k = 0; k < lanes.size(); ++k) sums[0][k % slots] += lanes[k];
    dense.fold(sums, counts);
    if (every_row != SumCount::kNone)
      for (std::size_t x = 0; x < slots; ++x)
        if (counts[every_row][x] != 0) a.hits[x] = 1;
  });
}

}  // namespace

bool fused_terms(const std::vector<Term>& terms, const std::vector<TermInput>& in) {
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const AggFunc f = terms[k].func;
    if (f != AggFunc::kSum && f != AggFunc::kCount && f != AggFunc::kMin && f != AggFunc::kMax &&
        !(f == AggFunc::kAvg && in[k].symbols->all_numeric()))
      return false;
  }
  return true;
}

Accumulators fused_aggregate(const Table& table, const Bitset* possible, std::uint64_t n_possible, std::uint32_t column,
                             const std::vector<std::uint32_t>& slot_of, bool affine, std::uint64_t first_stride,
                             const std::vector<std::pair<std::uint32_t, std::uint64_t>>& more_dims,
                             const std::vector<Term>& terms, const std::vector<TermInput>& in, std::size_t slots) {
  const PackedIndex& slot_index = table.columns[column].index;
  const CodeReader slot_codes(slot_index);
  const std::size_t n_codes = slot_of.size();
  ExtraDims extra;
  extra.first_stride = static_cast<std::uint32_t>(first_stride);
  for (const auto& [c, stride] : more_dims) {
    const PackedIndex& index = table.columns[c].index;
    ExtraDims::Dim d{&index, CodeReader(index), static_cast<std::uint32_t>(stride), {}};
    // Stored code -> value (symbol index + 1, 0 for NULL) times the stride; codes past the
    // width's last are read by no row.
    const std::size_t n = std::size_t{1} << index.bit_width();
    d.add.resize(n, 0);
    for (std::size_t code = 0; code < n; ++code) d.add[code] = static_cast<std::uint32_t>((code + 1 - d.codes.bias) * stride);
    extra.dims.push_back(std::move(d));
  }
  std::vector<FusedTerm> fts;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const PackedIndex& index = table.columns[terms[k].column].index;
    const AggFunc func = terms[k].func;
    const int extreme = func == AggFunc::kMin ? -1 : func == AggFunc::kMax ? 1 : 0;
    fts.push_back(FusedTerm{&index, CodeReader(index), nullptr, func == AggFunc::kAvg, extreme, {}});
    FusedTerm& f = fts.back();
    if (func == AggFunc::kCount) continue;
    const TermInput& t = in[k];
    f.n_numbers = t.n_symbols;
    if (extreme != 0) {  // ±inf where no number is: the start every slot holds already
      f.own.assign(std::size_t{t.n_symbols} + f.codes.bias, extreme < 0 ? kInf : -kInf);
      for (std::uint32_t x = 0; x < t.n_symbols; ++x)
        if (t.symbols->has_number(x)) f.own[x + f.codes.bias] = t.symbols->number(x);
      f.values = f.own.data();
      continue;
    }
    if (f.codes.bias == 0 && t.doubles != nullptr && t.symbols->all_numeric()) {
      f.values = t.doubles;  // the symbols' numbers as they are
      continue;
    }
    f.own.assign(std::size_t{t.n_symbols} + f.codes.bias, 0.0);
    for (std::uint32_t x = 0; x < t.n_symbols; ++x)
      if (t.symbols->has_number(x)) f.own[x + f.codes.bias] = t.symbols->number(x);
    f.values = f.own.data();
  }
  // The slots a row can reach: those of the stored codes (every slot_of entry past them is
  // kTrash, reached by no row).
  std::size_t reachable = 0;
  {
    std::vector<std::uint8_t> seen(slots, 0);
    for (std::size_t code = 0; code < n_codes - 1 + slot_codes.bias; ++code) {
      reachable += seen[slot_of[code]] ^ 1U;
      seen[slot_of[code]] = 1;
    }
    // With more dimensions, rows hold few of their combinations: every slot stays to be marked.
    if (!extra.empty()) reachable = slots;
  }
  std::vector<Accumulators> per_thread(pass_threads(table.rows, possible, n_possible, slots));
  if (slots <= 0x100) {
    const std::vector<std::uint8_t> map(slot_of.begin(), slot_of.end());
    fused_pass(table.rows, possible, n_possible, slot_index, map.data(), affine, extra, fts, in, per_thread, slots,
               reachable);
  } else if (slots <= 0x10000) {
    const std::vector<std::uint16_t> map(slot_of.begin(), slot_of.end());
    fused_pass(table.rows, possible, n_possible, slot_index, map.data(), affine, extra, fts, in, per_thread, slots,
               reachable);
  } else {
    fused_pass(table.rows, possible, n_possible, slot_index, slot_of.data(), affine, extra, fts, in, per_thread, slots,
               reachable);
  }
  return merged(per_thread, in, slots);
}

}  // namespace assoc::detail
