#pragma once
// A hypercube's accumulators: what each term reads, the per-slot accumulators of the terms,
// folding records into them, merging the threads' accumulators and reading the values out.
// Shared by the aggregation passes (hypercube_aggregate.cpp, hypercube_fused.cpp).
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "assoc/bitset.hpp"
#include "assoc/hypercube_aggregate.hpp"
#include "assoc/thread_pool.hpp"
#include "row_compress.hpp"

namespace assoc::detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::uint32_t kNone = 0xFFFFFFFFU;  // Only: no value yet
constexpr std::uint32_t kMany = 0xFFFFFFFEU;  // Only: two different values
// Accumulator slots: 0 every record once (totals), 1 records that count nowhere, then groups.
constexpr std::uint32_t kTotal = 0, kTrash = 1, kFirstGroup = 2;
constexpr std::size_t kBatch = 1024;
static_assert(kBatch % 16 == 0, "a chunk's rows are packed 16 at a time (row_compress.hpp)");

// What a term reads: its field's numbers as held, and where its distinct values are marked.
struct TermInput {
  AggFunc func = AggFunc::kSum;
  const SymbolTable* symbols = nullptr;
  const std::int32_t* ints = nullptr;
  const double* doubles = nullptr;
  bool int_range = false;  // neither array: symbol c is range_first + c
  std::int32_t range_first = 0;
  std::uint32_t n_symbols = 0;
  // Count(distinct) in a bitset (when words_per_slot is not 0; else in pairs). The symbols
  // fall into buckets of 2^bucket_shift, and the bitset is laid out bucket by bucket, each
  // bucket's words slot by slot, so one bucket's part is contiguous and small enough to stay
  // in cache. Threads gather marks per bucket and set them under the bucket's lock: no word
  // is written by two threads at once.
  std::size_t words_per_slot = 0;
  std::vector<std::uint64_t, CallocAllocator<std::uint64_t>> bits;
  std::uint32_t bucket_shift = 0;
  std::size_t n_buckets = 0, words_per_bucket = 0, slots = 0;
  std::unique_ptr<std::mutex[]> bucket_locks;

  // The words of one bucket for one slot.
  std::uint64_t* words(std::size_t bucket, std::size_t slot) {
    return bits.data() + (bucket * slots + slot) * words_per_bucket;
  }
};

// One thread's accumulators of one term, one entry per slot.
struct TermAcc {
  std::vector<double> a;               // Sum and Avg: sum; Min, Max: the extreme so far
  std::vector<std::uint64_t> n;        // Count: non-NULL values; Avg: numeric values
  std::vector<std::uint32_t> only;     // Only: kNone, the one symbol, or kMany
  std::vector<std::uint64_t> pairs;    // Count(distinct) without a bitset: slot << 32 | symbol
  std::vector<std::vector<std::uint32_t>> pending;  // per bucket: slot << shift | symbol in bucket
};

constexpr std::size_t kFlush = 256;  // marks gathered per bucket before they are set

// Calls fn(bucket) for every bucket of a Count(distinct) bitset, the buckets shared by the
// threads (each bucket's part of the bitset is its own).
template <class Fn>
void for_buckets(const TermInput& t, Fn&& fn) {
  parallel_ranges(t.n_buckets, 1, [&](std::size_t first, std::size_t end) {
    for (std::size_t b = first; b < end; ++b) fn(b);
  }, nullptr, 8);
}

struct Accumulators {
  std::vector<std::uint8_t> hits;  // per slot: 1 once a record reached it
  std::vector<TermAcc> terms;

  void resize(const std::vector<TermInput>& in, std::size_t slots) {
    hits.resize(slots, 0);
    terms.resize(in.size());
    for (std::size_t k = 0; k < in.size(); ++k) {
      TermAcc& t = terms[k];
      switch (in[k].func) {
        case AggFunc::kSum: t.a.resize(slots, 0.0); break;
        case AggFunc::kAvg: t.a.resize(slots, 0.0); t.n.resize(slots, 0); break;
        case AggFunc::kMin: t.a.resize(slots, kInf); break;
        case AggFunc::kMax: t.a.resize(slots, -kInf); break;
        case AggFunc::kCount: t.n.resize(slots, 0); break;
        case AggFunc::kOnly: t.only.resize(slots, kNone); break;
        case AggFunc::kCountDistinct:
          if (in[k].words_per_slot != 0) t.pending.resize(in[k].n_buckets);
          break;
      }
    }
  }
};

// Sets every mark a thread still holds (at the end of its part of the work).
void flush_all(std::vector<TermInput>& in, std::vector<TermAcc>& terms);

// Adds entries (slot, symbol) to one term's accumulators.
void accumulate(TermInput& t, TermAcc& acc, const std::uint32_t* slot, const std::uint32_t* code, std::size_t n);

// Distinct symbols per slot, from the bitset or from the sorted pairs.
std::vector<std::uint64_t> distinct_counts(TermInput& t, TermAcc& acc, std::size_t slots);

// Fills the totals slot from the groups, for passes where each record lands in one group.
void totals_from_groups(std::vector<TermInput>& in, Accumulators& acc, std::size_t slots);

// A term's value in one slot, and Only's symbol.
double value_of(const TermInput& t, const TermAcc& acc, const std::vector<std::uint64_t>& distinct, std::size_t s,
                std::uint32_t& symbol);

// Words per slot when a Count(distinct) of `n_symbols` values over `slots` slots is marked in
// a bitset: when it takes no more than the 12 bytes per record that pairs would; else 0.
std::size_t distinct_words(std::uint32_t n_symbols, std::size_t slots, std::uint64_t records);

// A term's input: its function and its field's symbols (their numbers read in place).
TermInput term_input(const DataModel& data, const Term& term);

// The threads' accumulators as one: the first, with every other one's hits and terms merged
// into it (a Count(distinct)'s pending pairs appended).
Accumulators merged(std::vector<Accumulators>& per_thread, const std::vector<TermInput>& in, std::size_t slots);

// Hands the chunks [0, n_chunks) of one pass to its threads, a run of consecutive chunks per
// claim. A claim is an atomic add on a line every thread writes; one per 1,024-row chunk cost
// more than a sparse chunk's own work (a fifth of a 10M-row cube over 10,000 selected rows).
// About 64 runs per thread still even out threads that the machine slows unequally.
class ChunkClaims {
 public:
  ChunkClaims(std::size_t n_chunks, std::size_t n_threads)
      : n_chunks_(n_chunks), run_(std::max<std::size_t>(1, n_chunks / (64 * std::max<std::size_t>(1, n_threads)))) {}
  // Calls fn(first, end) for every run [first, end) of chunks the calling thread claims.
  template <class Fn>
  void each_run(Fn&& fn) {
    for (std::size_t c; (c = next_.fetch_add(run_, std::memory_order_relaxed)) < n_chunks_;)
      fn(c, std::min(c + run_, n_chunks_));
  }
  // Calls fn(chunk) for every chunk the calling thread claims, until none is left.
  template <class Fn>
  void each(Fn&& fn) {
    each_run([&](std::size_t first, std::size_t end) {
      for (std::size_t c = first; c < end; ++c) fn(c);
    });
  }

 private:
  std::size_t n_chunks_, run_;
  std::atomic<std::size_t> next_{0};
};

// A table whose possible rows are at most this share of its rows (1/kSparseShare) is read by
// gathering the possible rows' numbers over runs of chunks (gather_rows): a chunk then holds a
// row or two, and its fixed work would cost more than the rows'.
constexpr std::uint64_t kSparseShare = 16;

inline bool sparse_rows(const Bitset* possible, std::uint64_t n_possible, std::size_t rows) {
  // Gathered rows are held as 32-bit offsets from their batch's first.
  return possible != nullptr && n_possible * kSparseShare <= rows && rows <= 0xFFFFFFFFULL;
}

// The threads a pass over a table's possible rows into `slots` accumulators uses: each thread
// clears its own accumulators and has them merged, work per slot; it splits the work per row.
// Where fewer rows are possible than four per slot (one customer's 10,000 rows by customer and
// region: 21,000 slots), one thread does it all.
inline std::size_t pass_threads(std::size_t rows, const Bitset* possible, std::uint64_t n_possible,
                                std::size_t slots) {
  const std::size_t n_chunks = (rows + kBatch - 1) / kBatch;
  if (sparse_rows(possible, n_possible, rows) && n_possible < std::uint64_t{slots} * 4) return 1;
  return std::max<std::size_t>(1, std::min<std::size_t>(threads(), n_chunks));
}

// Calls fn(begin, count, picked, n) for the rows of `possible` in the runs of chunks the
// calling thread claims, up to kBatch rows a call: `picked` holds their positions from `begin`,
// all below `count`, which may exceed kBatch (read such rows one by one, never as a range).
template <class Fn>
void gather_rows(ChunkClaims& claims, const Bitset& possible, std::size_t rows, std::uint32_t* picked, Fn&& fn) {
  const std::uint64_t* words = possible.words();
  const std::size_t n_words = (rows + 63) / 64;
  const std::uint64_t last = rows % 64 != 0 ? (std::uint64_t{1} << (rows % 64)) - 1 : ~std::uint64_t{0};
  std::size_t begin = 0, n = 0;
  claims.each_run([&](std::size_t first, std::size_t end) {
    // The words that hold rows, by the set's summary when it has one (Bitset::for_each_word).
    possible.for_each_word(first * (kBatch / 64), std::min(end * (kBatch / 64), n_words), [&](std::size_t w) {
      for (std::uint64_t bits = words[w] & (w + 1 == n_words ? last : ~std::uint64_t{0}); bits != 0; bits &= bits - 1) {
        const std::size_t row = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        if (n == 0) begin = row;
        picked[n++] = static_cast<std::uint32_t>(row - begin);
        if (n == kBatch) {
          fn(begin, row - begin + 1, picked, n);
          n = 0;
        }
      }
    });
  });
  if (n != 0) fn(begin, std::size_t{picked[n - 1]} + 1, picked, n);
}

// Runs `chunk(a, begin, count, picked, n, scratch)` over the possible rows of a table
// (`possible` null: every row) on up to threads() threads, each into accumulators of its own
// (`scratch` a thread's own state, made by `make_scratch`): `picked` holds the positions from
// `begin` of the n rows to read among `count` (null: all `count` of them). Chunks of kBatch
// rows are taken in turn; where few rows are possible, a call gets up to kBatch of them
// gathered over many chunks (gather_rows). Then each thread's pending distinct marks are
// flushed and the threads' accumulators merged.
template <class MakeScratch, class Chunk>
Accumulators accumulate_chunks(std::size_t rows, const Bitset* possible, std::uint64_t n_possible,
                               std::vector<TermInput>& in, std::size_t slots, MakeScratch&& make_scratch, Chunk&& chunk) {
  const std::size_t n_chunks = (rows + kBatch - 1) / kBatch;
  const std::size_t n_threads = pass_threads(rows, possible, n_possible, slots);
  std::vector<Accumulators> per_thread(n_threads);
  ChunkClaims claims(n_chunks, n_threads);
  const bool sparse = sparse_rows(possible, n_possible, rows);
  parallel_for(n_threads, [&](std::size_t th) {
    Accumulators& a = per_thread[th];
    a.resize(in, slots);
    auto scratch = make_scratch();
    std::vector<std::uint32_t> picked(kBatch);
    if (sparse) {
      gather_rows(claims, *possible, rows, picked.data(), [&](std::size_t begin, std::size_t count, const std::uint32_t* p, std::size_t n) {
        chunk(a, begin, count, p, n, scratch);
      });
    } else {
      claims.each([&](std::size_t c) {
        const std::size_t begin = c * kBatch;
        const std::size_t count = std::min(kBatch, rows - begin);
        if (possible == nullptr) {
          chunk(a, begin, count, nullptr, count, scratch);
          return;
        }
        const std::size_t n = row_positions(possible->words() + begin / 64, count, picked.data());
        if (n != 0) chunk(a, begin, count, picked.data(), n, scratch);
      });
    }
    flush_all(in, a.terms);
  });
  return merged(per_thread, in, slots);
}

// A chunk's row slots as at[i] + add: a dimension of the table over every row of a chunk
// reads its decoded symbols as they are (add kAffineSlot; NULL's kNull wraps to kFirstGroup, as
// chunk_slots makes it), with no pass to copy them; made slots are read with add 0.
struct Slots {
  const std::uint32_t* at = nullptr;
  std::uint32_t add = 0;
  std::uint32_t operator[](std::size_t i) const { return at[i] + add; }
};

// A thread's marks of the slots its rows reached. `unhit` counts the slots a row can reach
// (each stored code's) that are not marked yet: once none is left, a chunk's rows have nothing
// to mark (a 1,000-value dimension over 10M rows: marked within the first few chunks).
struct Hits {
  std::uint8_t* marks = nullptr;
  std::size_t unhit = 0;

  void mark(Slots slot, std::size_t m) {
    if (unhit == 0) return;
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < m; ++i) {
      fresh += marks[slot[i]] ^ 1U;
      marks[slot[i]] = 1;
    }
    unhit -= std::min(fresh, unhit);
  }
};

}  // namespace assoc::detail
