#pragma once
// The aggregations of one node of a hypercube: every aggregation over a field that node holds,
// per tuple its possible records reach, with dense per-slot accumulators.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "assoc/hypercube_join.hpp"

namespace assoc::detail {

// The aggregations the per-node accumulators compute straight from a field's symbols.
enum class AggFunc : std::uint8_t { kSum, kCount, kCountDistinct, kAvg, kMin, kMax, kOnly };

// The function's name as users write it ("Count(distinct …)" for kCountDistinct).
const char* agg_name(AggFunc f);

// One aggregation to compute: the function, its field, and the field's column at the node.
struct Term {
  AggFunc func = AggFunc::kSum;
  std::uint32_t field = 0;
  std::uint32_t column = kIdentity;
};

// A 64-bit key's index (a group's, a slot's): open addressing with the key in the slot, so a
// lookup touches one cache line and an insert allocates nothing until the table doubles.
class KeyIndex {
 public:
  static constexpr std::uint32_t kAbsent = 0xFFFFFFFFu;
  explicit KeyIndex(std::size_t n = 0) { rehash(std::bit_ceil(std::max<std::size_t>(2 * n + 1, 16))); }
  std::uint32_t find(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.index_plus_1 == 0) return kAbsent;
      if (e.key == key) return e.index_plus_1 - 1;
    }
  }
  // The key's index, `index` stored when the key is new; and whether it was.
  std::pair<std::uint32_t, bool> emplace(std::uint64_t key, std::uint32_t index) {
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.index_plus_1 == 0) break;
      if (e.key == key) return {e.index_plus_1 - 1, false};
    }
    slots_[i] = Entry{key, index + 1};
    if (++size_ * 2 > slots_.size()) rehash(slots_.size() * 2);
    return {index, true};
  }
  std::size_t size() const { return size_; }
  // Asks the CPU for the key's first entry ahead of a find or an emplace.
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&slots_[home(key)]); }

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::uint32_t index_plus_1 = 0;  // 0: empty
  };
  std::size_t home(std::uint64_t key) const {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<std::size_t>(key) & mask_;
  }
  void rehash(std::size_t capacity) {
    std::vector<Entry> old = std::move(slots_);
    slots_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    for (const Entry& e : old) {
      if (e.index_plus_1 == 0) continue;
      std::size_t i = home(e.key);
      while (slots_[i].index_plus_1 != 0) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }
  std::vector<Entry> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

// Per tuple key reached (a group), each term's value (NaN for NULL) and, for Only, its symbol.
struct NodeAggregates {
  std::vector<std::uint64_t> keys;                  // per group, ascending
  std::vector<std::vector<double>> values;          // per term, per group
  std::vector<std::vector<std::uint32_t>> symbols;  // per term, per group: Only's symbol or kNull
  std::vector<double> totals;                       // per term, over every possible record once
  std::vector<std::uint32_t> total_symbols;
};

// Aggregates `terms` over the possible records of the walker's root, per tuple they reach.
// `key_space` bounds every key. With no terms, only the keys reached.
NodeAggregates aggregate_node(const AssociativeModel& model, const RowStates& rows, JoinWalker& walker,
                              const std::vector<Term>& terms, std::uint64_t key_space);

// A term over a table's possible records grouped by one of its columns, dense per symbol of
// that column (no keys, no hashing): each symbol's value (NaN for NULL) and whether a possible
// record holds it. Records whose column is NULL count nowhere. Sum, Count, Avg, Min and Max;
// the rows are read in batches by several threads.
struct DenseGroups {
  std::vector<double> values;      // per symbol
  std::vector<std::uint8_t> hits;  // per symbol: 1 when a possible record holds it
};
DenseGroups aggregate_by_column(const AssociativeModel& model, const RowStates& rows, std::uint32_t table,
                                std::uint32_t group_column, const Term& term);

// A term's value over no record: 0 for Sum and the counts, NULL (NaN) for the others.
double empty_value(AggFunc f);

}  // namespace assoc::detail
