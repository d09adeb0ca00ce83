#pragma once
// The engine's one function library (spec chart-expressions §3, §6): every scalar function,
// aggregation and operator is registered here once, by name, and found here by the parser,
// the planner and the evaluation alike.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/expression.hpp"
#include "assoc/interpretation.hpp"
#include "assoc/value.hpp"

namespace assoc {

struct ScalarFunction {
  const char* name;  // as documented, e.g. "Num#"
  std::uint8_t min_args;
  std::uint8_t max_args;  // 255: any number
  // When true, a NULL argument gives NULL without calling the body.
  bool null_in_null_out;
  // The app's interpretation variables steer reading texts as numbers and dates, and the
  // default formats (DateFormat, FirstWeekDay, …).
  Value (*body)(std::span<const Value> args, const Interpretation& ix);
};

// Calls `f` as the evaluation does: NULL without calling it when `null_in_null_out` and an
// argument is NULL.
Value call_scalar(const ScalarFunction& f, std::span<const Value> args, const Interpretation& ix);

enum class AggKind : std::uint8_t {
  kSum, kCount, kAvg, kMin, kMax, kOnly, kMinString, kMaxString, kMode, kMedian, kFractile,
  kStdev, kVar, kNullCount, kMissingCount, kNumericCount, kTextCount, kConcat, kFirstSortedValue,
  kFractileExc, kSkew, kKurtosis,
};

struct AggregateFunction {
  const char* name;
  AggKind kind;
  std::uint8_t min_args;
  std::uint8_t max_args;
  bool distinct_allowed;
  bool star_allowed;  // Count(*)
  // Which argument, besides the first, is evaluated per record (a sort weight), -1 for none;
  // the others are constants of the call (a rank, a fraction, a delimiter).
  std::int8_t weight_arg;
};

// Registered functions by name, case-insensitively; nullptr when there is none.
const ScalarFunction* find_scalar_function(std::string_view name);
const AggregateFunction* find_aggregate_function(std::string_view name);
// Every registered scalar function, in the order they are listed.
std::vector<const ScalarFunction*> scalar_functions();
// Names of Qlik functions recognised but not computed yet.
bool is_planned_function(std::string_view name);

// A unary or binary operator on values, with Qlik's NULL rules (§6); a text operand is read as
// a number under `ix` (DecimalSep, dates, …), as the script and the charts read texts.
Value apply_unary(ExprOp op, const Value& a, const Interpretation& ix);
Value apply_binary(ExprOp op, const Value& a, const Value& b, const Interpretation& ix);

// One operand of an operator over rows: `count` values (1: the same on every row), numbers
// (NaN: none) and, when `texts` is set, texts where `has_text` is non-zero.
struct OperandColumn {
  const double* nums = nullptr;
  std::size_t count = 0;
  const std::string_view* texts = nullptr;
  const std::uint8_t* has_text = nullptr;
};

// The texts of an operator's values over rows, once one has a text: row r's text (where
// has_text[r]) is chars[ends[r - 1], ends[r]) (from 0 for row 0).
struct OperatorTexts {
  std::vector<std::uint8_t> has_text;  // empty: no value has a text
  std::string chars;
  std::vector<std::size_t> ends;
};

// apply_unary (one operand) or apply_binary (two) on each of n rows, in parallel: numbers in
// tight loops, each other row through the same apply_* (NULLs, texts, comparisons as text).
// The numbers go to nums[0..n), the texts are returned.
OperatorTexts apply_operator(ExprOp op, std::span<const OperandColumn> operands, std::size_t n,
                             const Interpretation& ix, double* nums);
// The operator written `name` ("+", "&", "like", "not", …; words in any case) with `arity`
// operands, or false when there is none.
bool operator_of(std::string_view name, std::size_t arity, ExprOp& op);

// An aggregation over the values of its records (in load order): `values` the first
// argument per record, `weights` the per-record weight argument (empty without one),
// `params` the constant arguments after the first (with the weight's place left NULL).
Value aggregate_values(AggKind kind, bool distinct, std::span<const Value> values, std::span<const Value> weights,
                       std::span<const Value> params);

// What an aggregation gives over no record: 0 for Sum and the counts, NULL for the others.
Value empty_aggregate(AggKind kind);

// Case-insensitive match of `text` against a pattern with * (any run) and ? (one character).
bool wildcard_match(std::string_view text, std::string_view pattern);

}  // namespace assoc
