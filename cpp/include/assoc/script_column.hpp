#pragma once
// Columns that a load script computes: built from a list of values and each row's position in
// it, or from another column whose symbols are replaced one for one, so an expression
// evaluated once per distinct value reuses the source column's packed rows.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// Each function's `cpu` (may be null) collects the CPU time of the worker threads that help it;
// the calling thread's own time is its caller's to count.

// A value a script computed: absent (nullopt) means NULL.
using ScriptValue = std::optional<DualView>;

// A column of `n` rows where row r holds values[codes[r]] (NULL when codes[r] is negative or
// the value is NULL). Values may repeat (equal ones become one symbol) and need not all be used
// (unused ones are left out); symbols keep first-occurrence order. A code at or past
// values.size() throws Error.
LoadedColumn column_from_values(std::string name, const std::vector<ScriptValue>& values,
                                 const std::int32_t* codes, std::size_t n, CpuAccount* cpu);

// A column with `source`'s rows where symbol k is replaced by values[k] (one value per symbol;
// NULL rows stay NULL). When the values are distinct and none is NULL the packed rows are
// copied as they are; otherwise equal values merge and the rows are re-packed.
LoadedColumn column_mapping_symbols(std::string name, const LoadedColumn& source,
                                    const std::vector<ScriptValue>& values, CpuAccount* cpu);

// Gives a column new symbols: values[k] replaces symbol k (same count, none NULL). Rows keep
// their symbol unless two new values are equal, in which case they merge and rows are re-packed.
void replace_symbols(LoadedColumn& column, const std::vector<DualView>& values, CpuAccount* cpu);

// The symbols that are text without a number and could read as one: every byte of the text is
// in `allowed` and at least one is a digit. Ascending symbol order.
std::vector<std::uint32_t> number_candidates(const SymbolTable& symbols, std::string_view allowed, CpuAccount* cpu);

// Rows [0, n) of a column as indexes into its symbol table, -1 for NULL.
void column_codes(const LoadedColumn& column, std::int32_t* out, CpuAccount* cpu);

}  // namespace assoc
