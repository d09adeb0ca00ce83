#include "assoc/expression_plan.hpp"

#include <array>

namespace assoc {

Value Plan::eval_node(std::uint32_t n, const Value* inputs) const {
  const PlanNode& p = nodes_[n];
  switch (p.kind) {
    case PlanNode::Kind::kConst: return p.value;
    case PlanNode::Kind::kInput: return inputs[p.input];
    case PlanNode::Kind::kUnary: return apply_unary(p.op, eval_node(p.args[0], inputs), *ix_);
    case PlanNode::Kind::kBinary: return apply_binary(p.op, eval_node(p.args[0], inputs), eval_node(p.args[1], inputs), *ix_);
    case PlanNode::Kind::kCall: {
      std::vector<Value> args;
      args.reserve(p.args.size());
      for (const std::uint32_t a : p.args) {
        args.push_back(eval_node(a, inputs));
        if (p.fn->null_in_null_out && args.back().is_null()) return Value::null();
      }
      return p.fn->body(args, *ix_);
    }
  }
  return Value::null();
}

std::uint32_t Plan::bind_node(const Expression& e, std::uint32_t n,
                              const std::function<std::uint32_t(std::uint32_t node)>& leaf) {
  const ExprNode& x = e.nodes[n];
  PlanNode p;
  switch (x.kind) {
    case ExprNode::Kind::kConst:
      p.value = x.value;
      break;
    case ExprNode::Kind::kUnary:
    case ExprNode::Kind::kBinary:
      p.kind = x.kind == ExprNode::Kind::kUnary ? PlanNode::Kind::kUnary : PlanNode::Kind::kBinary;
      p.op = x.op;
      for (const std::uint32_t a : x.args) p.args.push_back(bind_node(e, a, leaf));
      break;
    case ExprNode::Kind::kCall:
      p.fn = find_scalar_function(x.name);
      if (p.fn == nullptr || (as_leaf_ && as_leaf_(n))) {  // Aggr, the inter-record functions: computed by the caller
        p.kind = PlanNode::Kind::kInput;
        p.input = leaf(n);
        break;
      }
      p.kind = PlanNode::Kind::kCall;
      for (const std::uint32_t a : x.args) p.args.push_back(bind_node(e, a, leaf));
      break;
    case ExprNode::Kind::kScoped:  // an outer set: its scope's aggregations take it (the caller's leaves)
      return bind_node(e, x.args[1], leaf);
    default:
      p.kind = PlanNode::Kind::kInput;
      p.input = leaf(n);
      break;
  }
  // Operators and calls over constants are computed once, here (Null() included).
  if (p.kind != PlanNode::Kind::kConst && p.kind != PlanNode::Kind::kInput) {
    bool constant = true;
    for (const std::uint32_t a : p.args) constant = constant && nodes_[a].kind == PlanNode::Kind::kConst;
    if (constant) {
      nodes_.push_back(p);
      const Value v = eval_node(static_cast<std::uint32_t>(nodes_.size() - 1), nullptr);
      nodes_.pop_back();
      p = PlanNode{};
      p.value = v;
    }
  }
  nodes_.push_back(std::move(p));
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

Plan Plan::bind(const Expression& e, std::uint32_t root, const std::function<std::uint32_t(std::uint32_t node)>& leaf) {
  Plan plan;
  if (e.interpretation != nullptr) plan.ix_ = e.interpretation;
  plan.root_ = plan.bind_node(e, root, leaf);
  return plan;
}

Plan Plan::bind(const Expression& e, std::uint32_t root, const std::function<std::uint32_t(std::uint32_t node)>& leaf,
                const std::function<bool(std::uint32_t node)>& as_leaf) {
  Plan plan;
  if (e.interpretation != nullptr) plan.ix_ = e.interpretation;
  plan.as_leaf_ = as_leaf;
  plan.root_ = plan.bind_node(e, root, leaf);
  plan.as_leaf_ = nullptr;
  return plan;
}

}  // namespace assoc
