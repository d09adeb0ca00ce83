#pragma once
// Chart functions that read other rows of the sorted hypercube (spec chart-expressions §5):
// Above, Below, Top, Bottom, RowNo, NoOfRows, Column, Rank, and across a pivot table's columns
// Before, After, First, Last, ColumnNo, NoOfColumns, HRank. They are computed after the rows are
// sorted, over every row, not only a requested page. The vertical ones read a column segment:
// in a straight table the rows sharing every dimension value but the last; in a pivot table
// the rows sharing every left dimension but the last and every top one (one column of the
// pivot); with TOTAL, the whole column. The horizontal ones read a row segment of a pivot: the
// cells sharing every left dimension and every top one but the last (with TOTAL, the whole
// row); they are NULL in other tables.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace assoc {

enum class InterRecordKind : std::uint8_t {
  kAbove,
  kBelow,
  kTop,
  kBottom,
  kRowNo,
  kNoOfRows,
  kColumn,
  kRank,
  kHRank,
  kBefore,
  kAfter,
  kFirst,
  kLast,
  kColumnNo,
  kNoOfColumns,
};

// Whether it reads across a pivot's columns (a row segment) rather than down a column.
bool is_horizontal(InterRecordKind kind);

// Whether it reads other rows' values at an offset (Above, Below, Top, Bottom, Before, After,
// First, Last): usable with a count inside a Range function.
bool is_shift(InterRecordKind kind);

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
