#pragma once
// A hypercube's accumulators: what each term reads, the per-slot accumulators of the terms,
// folding records into them, merging the threads' accumulators and reading the values out.
// Shared by the aggregation passes (hypercube_aggregate.cpp).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "assoc/hypercube_aggregate.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc::detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::uint32_t kNone = 0xFFFFFFFFU;  // Only: no value yet
constexpr std::uint32_t kMany = 0xFFFFFFFEU;  // Only: two different values
// Accumulator slots: 0 every record once (totals), 1 records that count nowhere, then groups.
constexpr std::uint32_t kTotal = 0, kTrash = 1, kFirstGroup = 2;
constexpr std::size_t kBatch = 1024;

// What a term reads: its field's numbers as held, and where its distinct values are marked.
struct TermInput {
  AggFunc func = AggFunc::kSum;
  const SymbolTable* symbols = nullptr;
  const std::int32_t* ints = nullptr;
  const double* doubles = nullptr;
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

// Adds slot `ss` of `src` into slot `ds` of `dst` (Count(distinct) apart: see merge_distinct).
void merge_slot(const TermInput& t, TermAcc& dst, std::size_t ds, const TermAcc& src, std::size_t ss);

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

// The positions (from 0) of the rows set in `count` rows of a row set's words, into `picked`;
// how many.
std::size_t possible_positions(const std::uint64_t* mask, std::size_t count, std::uint32_t* picked);

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

// Runs `chunk(a, begin, count, scratch)` over a table's rows in chunks of kBatch taken in turn
// by up to threads() threads, each into accumulators of its own (`scratch` a thread's own
// state, made by `make_scratch`); each thread's pending distinct marks flushed, then the
// threads' accumulators merged.
template <class MakeScratch, class Chunk>
Accumulators accumulate_chunks(std::size_t rows, std::vector<TermInput>& in, std::size_t slots,
                               MakeScratch&& make_scratch, Chunk&& chunk) {
  const std::size_t n_chunks = (rows + kBatch - 1) / kBatch;
  const std::size_t n_threads = std::max<std::size_t>(1, std::min<std::size_t>(threads(), n_chunks));
  std::vector<Accumulators> per_thread(n_threads);
  ChunkClaims claims(n_chunks, n_threads);
  parallel_for(n_threads, [&](std::size_t th) {
    Accumulators& a = per_thread[th];
    a.resize(in, slots);
    auto scratch = make_scratch();
    claims.each([&](std::size_t c) {
      const std::size_t begin = c * kBatch;
      chunk(a, begin, std::min(kBatch, rows - begin), scratch);
    });
    flush_all(in, a.terms);
  });
  return merged(per_thread, in, slots);
}

}  // namespace assoc::detail
