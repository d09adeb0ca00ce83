#pragma once
// The engine's one function library (spec chart-expressions §3, §6): every scalar function,
// aggregation and operator is registered here once, by name, and found here by the parser,
// the planner and the evaluation alike.
#include <cstddef>
#include <cstdint>
#include <span>
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

// A unary or binary operator on values, with Qlik's NULL rules (§6).
Value apply_unary(ExprOp op, const Value& a);
Value apply_binary(ExprOp op, const Value& a, const Value& b);

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
