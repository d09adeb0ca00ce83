#pragma once
// A bound expression: the syntax tree with every function found in the registry, leaves
// turned into numbered inputs the caller fills (a field's value per record, an aggregation's
// value per row), and operators and calls over constants folded at plan time.
#include <cstdint>
#include <functional>
#include <vector>

#include "assoc/expression.hpp"
#include "assoc/functions.hpp"
#include "assoc/value.hpp"

namespace assoc {

struct PlanNode {
  enum class Kind : std::uint8_t { kConst, kInput, kUnary, kBinary, kCall };
  Kind kind = Kind::kConst;
  ExprOp op = ExprOp::kAdd;
  const ScalarFunction* fn = nullptr;
  Value value;             // kConst
  std::uint32_t input = 0;  // kInput
  std::vector<std::uint32_t> args;
};

class Plan {
 public:
  // The value with inputs[i] for input i. Never throws for any input values.
  Value eval(const Value* inputs) const { return eval_node(root_, inputs); }
  // The number interpretation its functions use (the expression's).
  const Interpretation& interpretation() const { return *ix_; }
  bool is_constant() const { return nodes_[root_].kind == PlanNode::Kind::kConst; }
  const Value& constant() const { return nodes_[root_].value; }
  // The input the whole plan is, or -1 when it is more than one input.
  std::int64_t single_input() const {
    return nodes_[root_].kind == PlanNode::Kind::kInput ? std::int64_t{nodes_[root_].input} : -1;
  }

  // Renumbers inputs from `from` on to start at `to`.
  void shift_inputs(std::uint32_t from, std::uint32_t to) {
    for (PlanNode& p : nodes_)
      if (p.kind == PlanNode::Kind::kInput && p.input >= from) p.input = p.input - from + to;
  }

  // Binds the subtree of `e` at `root`. `leaf` is called for every field, aggregation, set
  // and star of the subtree and returns the input number that stands for it (or throws).
  static Plan bind(const Expression& e, std::uint32_t root,
                   const std::function<std::uint32_t(std::uint32_t node)>& leaf);
  // The same, where `as_leaf` may also make a node that is a scalar call a leaf (a Range
  // function over several rows, computed by the caller).
  static Plan bind(const Expression& e, std::uint32_t root, const std::function<std::uint32_t(std::uint32_t node)>& leaf,
                   const std::function<bool(std::uint32_t node)>& as_leaf);

 private:
  Value eval_node(std::uint32_t n, const Value* inputs) const;
  std::uint32_t bind_node(const Expression& e, std::uint32_t n,
                          const std::function<std::uint32_t(std::uint32_t node)>& leaf);
  std::function<bool(std::uint32_t node)> as_leaf_;
  const Interpretation* ix_ = &Interpretation::defaults();
  std::vector<PlanNode> nodes_;
  std::uint32_t root_ = 0;
};

}  // namespace assoc
