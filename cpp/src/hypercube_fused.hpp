#pragma once
// The fused pass of hypercube aggregation (hypercube_fused.cpp): a table whose records each
// reach one tuple through one column (or through several dimensions of its own), every term a
// Sum, a Count, a Min, a Max or an Avg of a column of numbers only, read in one pass over the
// table's possible rows.
#include <cstdint>
#include <utility>
#include <vector>

#include "assoc/data_model.hpp"
#include "hypercube_accumulators.hpp"

namespace assoc::detail {

// Whether the fused pass takes these terms: Sums, Counts, Mins, Maxes, and Avgs of columns
// whose values are all numbers.
bool fused_terms(const std::vector<Term>& terms, const std::vector<TermInput>& in);

// The accumulators of `terms` over `table`'s possible rows (`possible` null: all; `n_possible`
// of them), a record's slot slot_of[its stored code of `column`] (`affine`: that column is a
// dimension of the table whose slot is its symbol index + kFirstGroup + 1, and the only one),
// plus, for each of the table's further dimensions (`more_dims`: column, stride), its value
// (symbol index + 1, 0 for NULL) times its stride. With further dimensions `column` is the first
// dimension's (no link), of stride `first_stride`.
Accumulators fused_aggregate(const Table& table, const Bitset* possible, std::uint64_t n_possible, std::uint32_t column,
                             const std::vector<std::uint32_t>& slot_of, bool affine, std::uint64_t first_stride,
                             const std::vector<std::pair<std::uint32_t, std::uint64_t>>& more_dims,
                             const std::vector<Term>& terms, const std::vector<TermInput>& in, std::size_t slots);

}  // namespace assoc::detail
