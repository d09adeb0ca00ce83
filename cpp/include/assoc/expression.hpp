#pragma once
// Chart expressions (spec chart-expressions §6): the syntax tree a parser makes of a measure,
// with the position of every node for errors. Operators by precedence, high to low: unary
// -, * /, + -, &, comparisons (= <> < <= > >= like precedes follows), not, and, or xor; all
// binary operators left-associative. Names: bare, [bracketed], "quoted" or `quoted`; strings
// in single quotes ('' escapes a quote); // and /* */ comments. Aggregations take an optional
// set expression {…}, DISTINCT or NODISTINCT, TOTAL [<F, …>], then their arguments.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "assoc/value.hpp"

namespace assoc {

// How deep an expression may nest (parentheses, calls, operator chains): deeper ones are an
// error, so no input can exhaust the stack of the parser or of the evaluation.
inline constexpr std::size_t kMaxExpressionDepth = 256;

enum class ExprOp : std::uint8_t {
  kNeg, kNot,                                             // unary
  kMul, kDiv, kAdd, kSub, kConcat,                        // arithmetic and &
  kEq, kNe, kLt, kLe, kGt, kGe, kLike, kPrecedes, kFollows,  // comparisons
  kAnd, kOr, kXor,
};

// The operator as written ("+", "like", …).
const char* op_name(ExprOp op);

struct ExprNode {
  enum class Kind : std::uint8_t {
    kConst,   // value
    kField,   // name: a field reference
    kUnary,   // op, args[0]
    kBinary,  // op, args[0], args[1]
    kCall,    // name (as written): a scalar function of args; also Aggr (args[0] the
              // expression, then its dimensions as kField nodes, with the modifiers below)
              // and the inter-record functions (Above, Rank, …; `total` for their TOTAL)
    kAgg,     // name (as written): an aggregation of args, with the modifiers below
    kStar,    // the * of Count(*)
    kSet,     // name: a set expression's text between { and }
    kScoped,  // args[0] a kSet, args[1] the expression it applies to (an outer set, §2.8)
  };
  Kind kind = Kind::kConst;
  ExprOp op = ExprOp::kAdd;
  std::string name;
  Value value;
  std::vector<std::uint32_t> args;
  std::size_t position = 0;  // 0-based offset in the text where the node starts
  // kAgg only.
  std::int32_t set = -1;  // node index of its kSet, -1 when none
  bool distinct = false;
  bool nodistinct = false;
  bool total = false;
  std::vector<std::string> total_fields;  // TOTAL <F, …>
  std::vector<std::size_t> total_positions;
  // kField as an Aggr dimension: its sort words as written, e.g. "NUMERIC DESCENDING".
  std::string sort;
};

// A parsed expression: nodes in a flat list, children before their parents.
class Interpretation;

struct Expression {
  std::string text;
  // The app's number interpretation its functions use (the defaults when null).
  const Interpretation* interpretation = nullptr;
  std::vector<ExprNode> nodes;
  std::uint32_t root = 0;
};

// Parses `text`; a malformed expression throws Error naming the position and the problem.
Expression parse_expression(const std::string& text);

}  // namespace assoc
