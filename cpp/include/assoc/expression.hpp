#pragma once
// Chart expressions of a hypercube's measures: aggregations over fields (Sum, Count,
// Count(distinct), Avg, Min, Max, Only) combined with + - * /, parentheses and numeric
// constants. A bare field stands for Only(field), as Qlik reads a naked field in a chart.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace assoc {

enum class AggFunc : std::uint8_t { kSum, kCount, kCountDistinct, kAvg, kMin, kMax, kOnly };

// The function's name as users write it ("Count(distinct …)" for kCountDistinct).
const char* agg_name(AggFunc f);

// One aggregation of a field, as written in the expression.
struct AggCall {
  AggFunc func = AggFunc::kSum;
  std::string field;
  std::size_t position = 0;  // where the field reference starts in the expression (0-based)
};

// A parsed expression: nodes in a flat list, children before their parents.
struct Expression {
  enum class Op : std::uint8_t { kConst, kAgg, kNeg, kAdd, kSub, kMul, kDiv };
  struct Node {
    Op op = Op::kConst;
    double value = 0;         // kConst
    std::uint32_t agg = 0;    // kAgg: index into aggs
    std::uint32_t lhs = 0;    // kNeg and binary operators
    std::uint32_t rhs = 0;    // binary operators
  };
  std::string text;
  std::vector<Node> nodes;  // the last node is the root
  std::vector<AggCall> aggs;

  // True when the whole expression is one aggregation (its value keeps the field's dual value).
  bool is_single_agg() const { return nodes.size() == 1 && nodes[0].op == Op::kAgg; }
};

// How deep parentheses and signs may nest (`((1))` is 2 levels, `-(-1)` 3): far beyond any
// real chart expression, far below what exhausts a thread's stack (under 1 kB a level).
inline constexpr std::size_t kMaxExpressionDepth = 256;

// Parses `text`; a malformed expression (or one nested deeper than kMaxExpressionDepth)
// throws Error naming the position and the problem.
Expression parse_expression(const std::string& text);

// Evaluates node by node over `n` rows: agg_values[a][r] is aggregation a's value on row r
// (NaN for NULL); arithmetic with NULL and division by 0 give NaN.
std::vector<double> evaluate_expression(const Expression& e, const std::vector<const double*>& agg_values,
                                        std::size_t n);

}  // namespace assoc
