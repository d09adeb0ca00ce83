#pragma once
// Scan kernels of selections over packed columns: rows whose symbol is in a set, and symbols
// that occur on a set of rows. Symbol sets have one bit more than the field has symbols:
// decoded NULLs (kNull) clamp to that last bit, which is never set, so no value needs a branch.
#include <cstdint>

#include "assoc/bitset.hpp"
#include "assoc/packed_index.hpp"

namespace assoc::detail {

// An empty set over a field's symbols (and the NULL bit).
inline Bitset symbol_set(std::uint32_t n_symbols) { return Bitset(std::size_t{n_symbols} + 1); }

// Rows of a column whose symbol is in `set`, in parallel over blocks of rows; only rows of
// `within` when given (the result is then a subset of it).
Bitset match_rows(const PackedIndex& index, const Bitset& set, const Bitset* within = nullptr);

// Symbols that occur on `rows` (null: every row) of a column, in parallel over blocks of rows.
// `held`: how many of the field's values the column holds on any row (0: not known); the scan
// stops once it has found that many.
Bitset values_on_rows(const PackedIndex& index, const Bitset* rows, std::uint32_t n_symbols, std::size_t held = 0);

}  // namespace assoc::detail
