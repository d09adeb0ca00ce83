// A hypercube's accumulators (hypercube_accumulators.hpp).
#include "hypercube_accumulators.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace assoc::detail {
namespace {

// Sets one bucket's gathered marks in the shared bitset.
void flush_bucket(TermInput& t, std::size_t bucket, std::vector<std::uint32_t>& marks) {
  const std::uint32_t shift = t.bucket_shift;
  const std::uint32_t low = (std::uint32_t{1} << shift) - 1;
  std::uint64_t* bits = t.words(bucket, 0);
  {
    std::lock_guard<std::mutex> lock(t.bucket_locks[bucket]);
    for (const std::uint32_t m : marks) {
      const std::size_t bit = (m >> shift) * t.words_per_bucket * 64 + (m & low);
      bits[bit >> 6] |= std::uint64_t{1} << (bit & 63);
    }
  }
  marks.clear();
}

// Calls op(slot, has_number, number) per entry, reading numbers straight from the symbol
// table's array (no per-row branch on the kind of array).
template <class T, class Op>
void numbers_loop(const T* v, std::uint32_t n_symbols, const std::uint32_t* slot, const std::uint32_t* code,
                  std::size_t n, Op op) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t c = code[i];
    const bool in = c < n_symbols;
    const auto x = static_cast<double>(v[in ? c : 0]);
    op(slot[i], in && x == x, x);
  }
}

template <class Op>
void for_numbers(const TermInput& t, const std::uint32_t* slot, const std::uint32_t* code, std::size_t n, Op op) {
  if (t.n_symbols == 0) return;
  if (t.ints != nullptr) {
    numbers_loop(t.ints, t.n_symbols, slot, code, n, op);
  } else if (t.int_range) {
    // Symbol c is range_first + c: no array to read.
    const std::int64_t first = t.range_first;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t c = code[i];
      const bool in = c < t.n_symbols;
      op(slot[i], in, static_cast<double>(first + (in ? c : 0)));
    }
  } else if (t.doubles != nullptr) {
    numbers_loop(t.doubles, t.n_symbols, slot, code, n, op);
  }
}

std::uint32_t merge_only(std::uint32_t a, std::uint32_t b) {
  if (b == kNone) return a;
  if (a == kNone) return b;
  return a == b ? a : kMany;
}

}  // namespace

// Sets every mark a thread still holds (at the end of its part of the work).
void flush_all(std::vector<TermInput>& in, std::vector<TermAcc>& terms) {
  for (std::size_t k = 0; k < in.size(); ++k)
    for (std::size_t b = 0; b < terms[k].pending.size(); ++b)
      if (!terms[k].pending[b].empty()) flush_bucket(in[k], b, terms[k].pending[b]);
}

// Adds entries (slot, symbol) to one term's accumulators.
void accumulate(TermInput& t, TermAcc& acc, const std::uint32_t* slot, const std::uint32_t* code, std::size_t n) {
  double* a = acc.a.data();
  std::uint64_t* cnt = acc.n.data();
  switch (t.func) {
    case AggFunc::kSum:
      for_numbers(t, slot, code, n, [a](std::uint32_t s, bool ok, double x) { a[s] += ok ? x : 0.0; });
      break;
    case AggFunc::kAvg:
      for_numbers(t, slot, code, n, [a, cnt](std::uint32_t s, bool ok, double x) {
        a[s] += ok ? x : 0.0;
        cnt[s] += ok ? 1U : 0U;
      });
      break;
    case AggFunc::kMin:
      for_numbers(t, slot, code, n, [a](std::uint32_t s, bool ok, double x) { a[s] = std::min(a[s], ok ? x : kInf); });
      break;
    case AggFunc::kMax:
      for_numbers(t, slot, code, n, [a](std::uint32_t s, bool ok, double x) { a[s] = std::max(a[s], ok ? x : -kInf); });
      break;
    case AggFunc::kCount:
      for (std::size_t i = 0; i < n; ++i) cnt[slot[i]] += code[i] != kNull ? 1U : 0U;
      break;
    case AggFunc::kOnly: {
      std::uint32_t* only = acc.only.data();
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t c = code[i];
        if (c == kNull) continue;
        const std::uint32_t st = only[slot[i]];
        only[slot[i]] = st == kNone ? c : (st == c ? st : kMany);
      }
      break;
    }
    case AggFunc::kCountDistinct:
      if (t.words_per_slot == 0) {
        for (std::size_t i = 0; i < n; ++i)
          if (code[i] != kNull && slot[i] != kTrash) acc.pairs.push_back(std::uint64_t{slot[i]} << 32 | code[i]);
        break;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t c = code[i];
        if (c == kNull || slot[i] == kTrash) continue;
        const std::uint32_t bucket = c >> t.bucket_shift;
        std::vector<std::uint32_t>& marks = acc.pending[bucket];
        marks.push_back(slot[i] << t.bucket_shift | (c & ((std::uint32_t{1} << t.bucket_shift) - 1)));
        if (marks.size() == kFlush) flush_bucket(t, bucket, marks);
      }
      break;
  }
}

// Adds slot `ss` of `src` into slot `ds` of `dst` (Count(distinct) apart: see merge_distinct).
// Merges src's slots `from` into dst's slots `to(s)`, for the slots `pick(s)` is true of (the
// others hold their starting values: nothing to merge). The function is chosen once per term,
// not per slot.
template <class To, class Pick>
void merge_slots(const TermInput& t, TermAcc& dst, const TermAcc& src, std::size_t from, std::size_t slots, To&& to,
                 Pick&& pick) {
  auto each = [&](auto&& fn) {
    for (std::size_t s = from; s < slots; ++s)
      if (pick(s)) fn(to(s), s);
  };
  switch (t.func) {
    case AggFunc::kSum: each([&](std::size_t d, std::size_t s) { dst.a[d] += src.a[s]; }); break;
    case AggFunc::kAvg:
      each([&](std::size_t d, std::size_t s) {
        dst.a[d] += src.a[s];
        dst.n[d] += src.n[s];
      });
      break;
    case AggFunc::kMin: each([&](std::size_t d, std::size_t s) { dst.a[d] = std::min(dst.a[d], src.a[s]); }); break;
    case AggFunc::kMax: each([&](std::size_t d, std::size_t s) { dst.a[d] = std::max(dst.a[d], src.a[s]); }); break;
    case AggFunc::kCount: each([&](std::size_t d, std::size_t s) { dst.n[d] += src.n[s]; }); break;
    case AggFunc::kOnly: each([&](std::size_t d, std::size_t s) { dst.only[d] = merge_only(dst.only[d], src.only[s]); }); break;
    case AggFunc::kCountDistinct: break;
  }
}

// Distinct symbols per slot, from the bitset or from the sorted pairs.
std::vector<std::uint64_t> distinct_counts(TermInput& t, TermAcc& acc, std::size_t slots) {
  std::vector<std::uint64_t> out(slots, 0);
  if (t.words_per_slot != 0) {
    // Per range of buckets its own counts, added up after: both threads read the bitset.
    std::mutex lock;
    parallel_ranges(t.n_buckets, 1, [&](std::size_t first, std::size_t end) {
      std::vector<std::uint64_t> counts(slots, 0);
      for (std::size_t b = first; b < end; ++b) {
        for (std::size_t s = 0; s < slots; ++s) {
          const std::uint64_t* w = t.words(b, s);
          counts[s] += count_bits(w, t.words_per_bucket);
        }
      }
      std::lock_guard<std::mutex> hold(lock);
      for (std::size_t s = 0; s < slots; ++s) out[s] += counts[s];
    }, nullptr, 8);
    return out;
  }
  // Pairs grouped by slot (a counting sort), then each slot's symbols marked in one bitset
  // over the field, counted, and unmarked: linear, and the bitset stays in cache.
  std::vector<std::size_t> start(slots + 1, 0);
  for (const std::uint64_t p : acc.pairs) ++start[(p >> 32) + 1];
  for (std::size_t s = 0; s < slots; ++s) start[s + 1] += start[s];
  std::vector<std::uint32_t> symbols(acc.pairs.size());
  std::vector<std::size_t> fill(start.begin(), start.end() - 1);
  for (const std::uint64_t p : acc.pairs) symbols[fill[p >> 32]++] = static_cast<std::uint32_t>(p);
  std::vector<std::uint64_t>().swap(acc.pairs);
  Bitset seen(t.n_symbols);
  std::uint64_t* w = seen.words();
  for (std::size_t s = 0; s < slots; ++s) {
    std::uint64_t c = 0;
    for (std::size_t i = start[s]; i < start[s + 1]; ++i) {
      const std::uint32_t x = symbols[i];
      const std::uint64_t bit = std::uint64_t{1} << (x & 63);
      c += (w[x >> 6] & bit) ? 0U : 1U;
      w[x >> 6] |= bit;
    }
    for (std::size_t i = start[s]; i < start[s + 1]; ++i) w[symbols[i] >> 6] = 0;
    out[s] = c;
  }
  return out;
}

// Fills the totals slot from the groups, for passes where each record lands in one group.
void totals_from_groups(std::vector<TermInput>& in, Accumulators& acc, std::size_t slots) {
  for (std::size_t s = kFirstGroup; s < slots; ++s) acc.hits[kTotal] |= acc.hits[s];
  for (std::size_t k = 0; k < in.size(); ++k) {
    TermInput& t = in[k];
    if (t.func != AggFunc::kCountDistinct) {
      // Groups no record reached hold their starting values: only those reached are read.
      const std::uint8_t* hits = acc.hits.data();
      merge_slots(
          t, acc.terms[k], acc.terms[k], kFirstGroup, slots, [](std::size_t) { return std::size_t{kTotal}; },
          [&](std::size_t s) { return hits[s] != 0; });
    } else if (t.words_per_slot != 0) {
      for_buckets(t, [&](std::size_t b) {
        std::uint64_t* total = t.words(b, kTotal);
        for (std::size_t s = kFirstGroup; s < slots; ++s) {
          const std::uint64_t* w = t.words(b, s);
          for (std::size_t i = 0; i < t.words_per_bucket; ++i) total[i] |= w[i];
        }
      });
    } else {
      auto& pairs = acc.terms[k].pairs;
      const std::size_t n = pairs.size();
      for (std::size_t i = 0; i < n; ++i) pairs.push_back(pairs[i] & 0xFFFFFFFFULL);  // slot 0
    }
  }
}

// A term's value in one slot, and Only's symbol.
double value_of(const TermInput& t, const TermAcc& acc, const std::vector<std::uint64_t>& distinct, std::size_t s,
                std::uint32_t& symbol) {
  symbol = kNull;
  switch (t.func) {
    case AggFunc::kSum: return acc.a[s];
    case AggFunc::kAvg: return acc.n[s] ? acc.a[s] / static_cast<double>(acc.n[s]) : kNaN;
    case AggFunc::kMin:
    case AggFunc::kMax: return std::isinf(acc.a[s]) ? kNaN : acc.a[s];
    case AggFunc::kCount: return static_cast<double>(acc.n[s]);
    case AggFunc::kCountDistinct: return static_cast<double>(distinct[s]);
    case AggFunc::kOnly: {
      const std::uint32_t st = acc.only[s];
      if (st >= t.n_symbols) return kNaN;
      symbol = st;
      return t.symbols->number(st);
    }
  }
  return kNaN;
}

// Words per slot when a Count(distinct) of `n_symbols` values over `slots` slots is marked in
// a bitset: when it takes no more than the 12 bytes per record that pairs would; else 0.
std::size_t distinct_words(std::uint32_t n_symbols, std::size_t slots, std::uint64_t records) {
  const std::size_t words = (std::size_t{n_symbols} + 63) / 64;
  const std::uint64_t budget = std::max<std::uint64_t>(std::uint64_t{1} << 16, records * 12);
  return slots * words * 8 <= budget ? words : 0;
}

// A term's input: its function and its field's symbols (their numbers read in place).
TermInput term_input(const DataModel& data, const Term& term) {
  TermInput t;
  t.func = term.func;
  t.symbols = &data.fields()[term.field].symbols;
  t.n_symbols = t.symbols->size();
  if (!t.symbols->int_numbers().empty()) t.ints = t.symbols->int_numbers().data();
  t.int_range = t.symbols->is_int_range();
  t.range_first = t.symbols->range_first();
  if (!t.symbols->double_numbers().empty()) t.doubles = t.symbols->double_numbers().data();
  return t;
}

// The threads' accumulators as one: the first, with every other one's hits and terms merged
// into it (a Count(distinct)'s pending pairs appended).
Accumulators merged(std::vector<Accumulators>& per_thread, const std::vector<TermInput>& in, std::size_t slots) {
  Accumulators acc = std::move(per_thread[0]);
  for (std::size_t th = 1; th < per_thread.size(); ++th) {
    const Accumulators& o = per_thread[th];
    for (std::size_t s = 0; s < slots; ++s) acc.hits[s] |= o.hits[s];
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (in[k].func == AggFunc::kCountDistinct) {
        acc.terms[k].pairs.insert(acc.terms[k].pairs.end(), o.terms[k].pairs.begin(), o.terms[k].pairs.end());
        continue;
      }
      // A slot the other thread never reached holds its starting values (every pass marks a
      // slot in hits as it adds to it); the totals and the trash slots are merged anyway.
      const std::uint8_t* hits = o.hits.data();
      merge_slots(
          in[k], acc.terms[k], o.terms[k], 0, slots, [](std::size_t s) { return s; },
          [&](std::size_t s) { return s < kFirstGroup || hits[s] != 0; });
    }
  }
  return acc;
}

}  // namespace assoc::detail
