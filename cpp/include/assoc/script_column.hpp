#pragma once
// Columns that a load script computes: built from a list of values and each row's position in
// it, so an expression evaluated once per distinct value reuses the source column's rows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// A column of `n` rows where row r holds values[codes[r]] (NULL when codes[r] is negative).
// Values may repeat (equal ones become one symbol) and need not all be used (unused ones are
// left out); symbols keep first-occurrence order. A code at or past values.size() throws Error.
LoadedColumn column_from_values(std::string name, const std::vector<DualView>& values,
                                 const std::int32_t* codes, std::size_t n, CpuAccount* cpu);

// Rows [0, n) of a column as indexes into its symbol table, -1 for NULL.
void column_codes(const LoadedColumn& column, std::int32_t* out, CpuAccount* cpu);

}  // namespace assoc
