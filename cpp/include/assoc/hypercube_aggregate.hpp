#pragma once
// The aggregations of one node of a hypercube: every aggregation over a field that node holds,
// per tuple its possible records reach, with dense per-slot accumulators.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
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

// Per tuple key reached (a group), each term's value (NaN for NULL) and, for Only, its symbol.
struct NodeAggregates {
  std::vector<std::uint64_t> keys;
  std::vector<std::vector<double>> values;          // per term, per group
  std::vector<std::vector<std::uint32_t>> symbols;  // per term, per group: Only's symbol or kNull
  std::vector<double> totals;                       // per term, over every possible record once
  std::vector<std::uint32_t> total_symbols;
  std::unordered_map<std::uint64_t, std::uint32_t> group_of;  // key -> group
};

// Aggregates `terms` over the possible records of the walker's root, per tuple they reach.
// `key_space` bounds every key. With no terms, only the keys reached.
NodeAggregates aggregate_node(const AssociativeModel& model, const RowStates& rows, JoinWalker& walker,
                              const std::vector<Term>& terms, std::uint64_t key_space);

// A term's value over no record: 0 for Sum and the counts, NULL (NaN) for the others.
double empty_value(AggFunc f);

}  // namespace assoc::detail
