#pragma once
// Merging the CSV chunks' local symbol tables into one symbol table per column, in
// first-occurrence order, and packing every row's final symbol index.
#include <cstddef>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"
#include "csv_chunk.hpp"

namespace assoc::detail {

// Rows per packing task: enough to amortise a task, few enough to spread the columns evenly.
inline constexpr std::size_t kPackRows = std::size_t{1} << 20;

// Fills `table`'s columns (named already) from the chunks, whose rows start at `row_offsets`
// (one more entry than chunks: the total). Runs as tasks over columns x chunks, hash partitions,
// slices of key ranges or ranges of rows.
void merge_chunks(std::vector<ParsedChunk>& chunks, const std::vector<std::size_t>& row_offsets, LoadedTable& table,
                  CpuAccount* cpu);

}  // namespace assoc::detail
