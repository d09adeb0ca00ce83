#pragma once
// Chart functions that read other rows of the sorted hypercube (spec chart-expressions §5):
// Above, Below, Top, Bottom, RowNo, NoOfRows, Column, Rank, HRank. They are computed after the
// rows are sorted, per column segment (the rows sharing every dimension value but the last) or,
// with TOTAL, over the whole column; over every row, not only a requested page. HRank ranks
// across the columns of a pivot table (its row segment), and is NULL in other tables.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace assoc {

enum class InterRecordKind : std::uint8_t { kAbove, kBelow, kTop, kBottom, kRowNo, kNoOfRows, kColumn, kRank, kHRank };

struct InterRecordFunction {
  const char* name;
  InterRecordKind kind;
  std::uint8_t min_args;
  std::uint8_t max_args;
  bool total_allowed;
};

// The inter-record function of that name (case-insensitive), nullptr when there is none.
const InterRecordFunction* find_inter_record_function(std::string_view name);

// Ranks of one segment's values (spec §5): `values` in the rows' display order, NaN for NULL;
// `mode` 0..4 and `fmt` 0..2 as Qlik documents them. Writes each row's rank number (NaN for
// NULL) and its text ("" when the number alone shows it; `has_text` says which rows have one).
void rank_segment(const double* values, std::size_t n, int mode, int fmt, double* rank_out, std::string* text_out,
                  std::uint8_t* has_text);

}  // namespace assoc
