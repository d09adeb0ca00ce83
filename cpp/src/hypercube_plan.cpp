// A measure bound to a plan over the aggregations it reads: which node and record set
// computes each one, by the accumulators or generically, and the record sets of set analysis.
#include <algorithm>
#include <optional>

#include "assoc/error.hpp"
#include "assoc/state_functions.hpp"
#include "hypercube_builder.hpp"

namespace assoc {

void HypercubeBuilder::fail(const std::string& text, std::size_t pos, const std::string& what) {
  throw Error("expression '" + text + "': " + what + " at position " + std::to_string(pos));
}

std::uint32_t HypercubeBuilder::field_index(const std::string& text, const ExprNode& x) const {
  const int f = data_.find_field(x.name);
  if (f < 0) fail(text, x.position, "unknown field '" + x.name + "'");
  return static_cast<std::uint32_t>(f);
}

std::uint32_t HypercubeBuilder::column_at(std::uint32_t node, std::uint32_t field) const {
  if (graph_.is_field(node)) return detail::kIdentity;
  return static_cast<std::uint32_t>(data_.tables()[node].column_of(field));
}

MeasureInput HypercubeBuilder::fast_input(AggFunc func, std::uint32_t field, std::uint32_t set) {
  const std::uint32_t node = graph_.node_of_field(field);
  Term term;
  term.func = func;
  term.field = field;
  term.column = column_at(node, field);
  auto& terms = terms_[Slot{node, set}];
  grouped_slots_.insert(Slot{node, set});
  std::size_t index = 0;
  while (index < terms.size() && !(terms[index].func == term.func && terms[index].field == term.field)) ++index;
  if (index == terms.size()) terms.push_back(term);
  return MeasureInput{node, index, false, set};
}

void HypercubeBuilder::check_argument(const std::string& text, const Expression& e, std::uint32_t n) const {
  const ExprNode& x = e.nodes[n];
  if (lookups_.contains(n)) return;  // TOTAL <…> over the chart's dimensions: read per row
  if (x.kind == ExprNode::Kind::kAgg)
    fail(text, x.position,
         "an aggregation inside another aggregation (" + x.name +
             ") needs Aggr or TOTAL: write e.g. Sum(Aggr(Sum(X), Dim)) or Sum(If(X = Max(TOTAL X), Y))");
  if (x.kind == ExprNode::Kind::kCall && find_inter_record_function(x.name) != nullptr)
    fail(text, x.position, "an inter-record function (" + x.name + ") inside an aggregation; it reads chart rows, not records");
  if (x.kind == ExprNode::Kind::kSet || x.kind == ExprNode::Kind::kScoped)
    fail(text, x.position, "a set expression inside an aggregation's argument is not supported; write it first in the aggregation");
  for (const std::uint32_t a : x.args) check_argument(text, e, a);
}

void HypercubeBuilder::collect_fields(const std::string& text, const Expression& e, std::uint32_t n,
                                      std::vector<std::pair<std::uint32_t, std::size_t>>& out) const {
  const ExprNode& x = e.nodes[n];
  if (lookups_.contains(n)) return;  // its fields are read by its own cube
  if (x.kind == ExprNode::Kind::kField) {
    const std::uint32_t f = field_index(text, x);
    if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.first == f; })) out.emplace_back(f, x.position);
  }
  for (const std::uint32_t a : x.args) collect_fields(text, e, a, out);
}

std::uint32_t HypercubeBuilder::node_for(const std::string& text, const ExprNode& agg,
                                         const std::vector<std::pair<std::uint32_t, std::size_t>>& fields) const {
  const auto& tables = data_.tables();
  if (fields.empty()) {
    std::uint32_t best = detail::kNoNode;
    for (std::uint32_t t = 0; t < tables.size(); ++t)
      if (!tables[t].is_system && !tables[t].is_synthetic && (best == detail::kNoNode || tables[t].rows > tables[best].rows))
        best = t;
    if (best == detail::kNoNode) fail(text, agg.position, agg.name + " without a field needs a data table");
    return best;
  }
  if (fields.size() == 1) return graph_.node_of_field(fields[0].first);
  std::uint32_t node = detail::kNoNode;
  for (const auto& [f, pos] : fields)
    if (!graph_.is_field(graph_.node_of_field(f))) node = graph_.node_of_field(f);
  for (std::uint32_t t = 0; t < tables.size() && node == detail::kNoNode; ++t) {
    if (tables[t].is_system) continue;
    if (std::all_of(fields.begin(), fields.end(), [&](const auto& p) { return tables[t].column_of(p.first) >= 0; }))
      node = t;
  }
  if (node != detail::kNoNode) {
    for (const auto& [f, pos] : fields)
      if (tables[node].column_of(f) < 0)
        fail(text, pos,
             agg.name + " reads fields of more than one table ('" + data_.fields()[f].name + "' is not in table '" +
                 tables[node].name + "'); an aggregation's argument reads the records of one table");
    return node;
  }
  fail(text, agg.position, agg.name + " reads fields of more than one table; an aggregation's argument reads the records of one table");
}

MeasureInput HypercubeBuilder::plan_aggregation(const std::string& text, const Expression& e, std::uint32_t n) {
  const ExprNode& x = e.nodes[n];
  const AggregateFunction& fn = *find_aggregate_function(x.name);
  std::shared_ptr<const SetNode> own;
  if (x.set >= 0) {
    const ExprNode& sn = e.nodes[static_cast<std::size_t>(x.set)];
    own = parse_set_expression(text, sn.name, sn.position + 1);
  }
  const std::uint32_t set = intern_set(inherit_set(scope_[n], own));
  if (x.nodistinct) fail(text, x.position, "NODISTINCT belongs to Aggr, not to " + x.name);
  if (const std::int64_t first = find_aggr(e, n); first >= 0) {
    MeasureInput in;
    in.aggr = plan_aggr_term(text, e, n, static_cast<std::uint32_t>(first), set);
    return in;
  }
  for (const std::uint32_t a : x.args) check_argument(text, e, a);
  const ExprNode& arg = e.nodes[x.args[0]];
  const bool star = arg.kind == ExprNode::Kind::kStar;
  // The accumulators' own functions over a plain field; a TOTAL that keeps none of the
  // chart's dimensions reads the same accumulators' total (the totals row's value).
  const bool whole_total =
      x.total && std::none_of(x.total_fields.begin(), x.total_fields.end(), [&](const std::string& f) {
        return std::find(cube_->spec_.dimensions.begin(), cube_->spec_.dimensions.end(), f) !=
               cube_->spec_.dimensions.end();
      });
  if ((!x.total || whole_total) && !star && arg.kind == ExprNode::Kind::kField && x.args.size() == 1) {
    std::optional<AggFunc> func;
    switch (fn.kind) {
      case AggKind::kSum: func = x.distinct ? std::nullopt : std::optional(AggFunc::kSum); break;
      case AggKind::kCount: func = x.distinct ? AggFunc::kCountDistinct : AggFunc::kCount; break;
      case AggKind::kAvg: func = x.distinct ? std::nullopt : std::optional(AggFunc::kAvg); break;
      case AggKind::kMin: func = AggFunc::kMin; break;
      case AggKind::kMax: func = AggFunc::kMax; break;
      case AggKind::kOnly: func = AggFunc::kOnly; break;
      default: break;
    }
    const std::uint32_t field = field_index(text, arg);
    const bool key = graph_.is_field(graph_.node_of_field(field));
    if (func && (!key || *func == AggFunc::kCountDistinct || *func == AggFunc::kOnly)) {
      if (x.total) {
        // An unknown field named in TOTAL <…> is still an error.
        for (std::size_t i = 0; i < x.total_fields.size(); ++i)
          if (data_.find_field(x.total_fields[i]) < 0)
            fail(text, x.total_positions[i], "unknown field '" + x.total_fields[i] + "' in TOTAL <…>");
      }
      const bool grouped = grouped_slots_.contains(Slot{graph_.node_of_field(field), set});
      MeasureInput in = fast_input(*func, field, set);
      in.whole = x.total;
      // A TOTAL brings no chart rows of its own (its records' values are one total).
      if (x.total && !grouped) grouped_slots_.erase(Slot{in.node, in.set});
      return in;
    }
  }
  GenericTerm term;
  term.fn = &fn;
  term.distinct = x.distinct;
  term.total = x.total;
  term.keep_dim.assign(dims_.size(), 0);
  for (std::size_t i = 0; i < x.total_fields.size(); ++i) {
    if (data_.find_field(x.total_fields[i]) < 0)
      fail(text, x.total_positions[i], "unknown field '" + x.total_fields[i] + "' in TOTAL <…>");
    for (std::size_t d = 0; d < dims_.size(); ++d)
      if (cube_->spec_.dimensions[d] == x.total_fields[i]) term.keep_dim[d] = 1;
  }
  std::vector<std::pair<std::uint32_t, std::size_t>> fields;
  collect_fields(text, e, x.args[0], fields);
  if (fn.weight_arg >= 0 && static_cast<std::size_t>(fn.weight_arg) < x.args.size())
    collect_fields(text, e, x.args[static_cast<std::size_t>(fn.weight_arg)], fields);
  const std::uint32_t node = node_for(text, x, fields);
  if (graph_.is_field(node) && !x.distinct && fn.kind != AggKind::kOnly && fn.kind != AggKind::kMin &&
      fn.kind != AggKind::kMax && fn.kind != AggKind::kMinString && fn.kind != AggKind::kMaxString)
    throw Error("expression '" + text + "': " + fn.name + " of key field '" + data_.fields()[fields[0].first].name +
                "' at position " + std::to_string(fields[0].second) +
                ": a key field's records are its distinct values, so it allows only DISTINCT aggregations, "
                "Only, Min, Max, MinString and MaxString");
  for (const auto& [f, pos] : fields) term.fields.push_back(f);
  std::vector<std::uint32_t> lookup_nodes;
  auto record_input = [&](std::uint32_t leaf) -> std::uint32_t {
    const ExprNode& y = e.nodes[leaf];
    if (y.kind == ExprNode::Kind::kStar) return 0;  // Count(*): a constant per record, below
    if (lookups_.contains(leaf)) {
      auto at = std::find(lookup_nodes.begin(), lookup_nodes.end(), leaf);
      if (at == lookup_nodes.end()) at = lookup_nodes.insert(at, leaf);
      return static_cast<std::uint32_t>(term.fields.size() + static_cast<std::size_t>(at - lookup_nodes.begin()));
    }
    const std::uint32_t f = field_index(text, y);
    return static_cast<std::uint32_t>(std::find(term.fields.begin(), term.fields.end(), f) - term.fields.begin());
  };
  if (star) {
    Expression one;
    ExprNode c;
    c.value = Value::number(1);
    one.nodes.push_back(c);
    term.value = Plan::bind(one, 0, record_input);
  } else {
    term.value = Plan::bind(e, x.args[0], record_input);
  }
  term.params.assign(x.args.size(), Value::null());
  for (std::size_t i = 1; i < x.args.size(); ++i) {
    if (static_cast<std::int8_t>(i) == fn.weight_arg) {
      term.weight = Plan::bind(e, x.args[i], record_input);
      term.has_weight = true;
      continue;
    }
    const Plan p = Plan::bind(e, x.args[i], [&](std::uint32_t leaf) -> std::uint32_t {
      fail(text, e.nodes[leaf].position, std::string("argument ") + std::to_string(i + 1) + " of " + fn.name +
                                             " must be a constant");
    });
    term.params[i] = p.constant();
  }
  // Each TOTAL <…> inside, keyed by the combinations of its dimensions in this node's part.
  const std::size_t p = part_of_node(node);
  for (const std::uint32_t ln : lookup_nodes) {
    const RowLookup& global = lookups_.at(ln);
    if (x.total)
      fail(text, e.nodes[ln].position,
           "TOTAL <…> naming a chart dimension inside an aggregation that has TOTAL itself is not supported");
    RowLookup local;
    local.keep = global.keep;
    local.empty = global.empty;
    local.all = global.all;
    for (std::size_t d = 0; d < dims_.size(); ++d)
      if (global.keep[d] && (p == kNoPart || parts_[p].dims[d].stride == 0))
        fail(text, e.nodes[ln].position,
             "TOTAL <" + cube_->spec_.dimensions[d] + "> inside " + x.name + ": the dimension '" +
                 cube_->spec_.dimensions[d] + "' is not linked to the records " + x.name + " reads");
    for (const auto& [key, value] : global.values) {
      std::uint64_t k = 0;
      for (std::size_t d = 0; d < dims_.size(); ++d) {
        if (!global.keep[d]) continue;
        const std::uint64_t radix = std::uint64_t{data_.fields()[dims_[d].field].symbols.size()} + 1;
        k += key / dims_[d].stride % radix * parts_[p].dims[d].stride;
      }
      local.values.emplace(k, value);
    }
    term.lookups.push_back(std::move(local));
  }
  auto& terms = generic_[Slot{node, set}];
  terms.push_back(std::move(term));
  return MeasureInput{node, terms.size() - 1, true, set};
}

void HypercubeBuilder::plan_measures() {
  const std::vector<std::string>& texts = cube_->spec_.measures;
  for (std::size_t m = 0; m < texts.size(); ++m) {
    MeasurePlan plan;
    std::uint32_t root = 0;
    std::shared_ptr<const SetNode> outer;
    if (nested_.exprs.empty()) {
      plan.expr = parse_expression(texts[m]);
      root = plan.expr.root;
    } else {
      plan.expr = nested_.exprs[m].first;
      root = nested_.exprs[m].second;
      if (m < nested_.scopes.size()) outer = nested_.scopes[m];
    }
    plan.expr.interpretation = &data_.interpretation();
    fold_state_functions(plan.expr, model_, *states_, state_name_);
    scope_.assign(plan.expr.nodes.size(), nullptr);
    lookups_.clear();
    mark_scopes(plan.expr.text, plan.expr, root, outer);
    fold_inner_totals(plan.expr, root, false);
    const Expression& e = plan.expr;
    plan.plan = bind_measure(e.text, e, root, plan, false);
    measures_.push_back(std::move(plan));
  }
}

void HypercubeBuilder::fold_inner_totals(Expression& e, std::uint32_t n, bool inside_aggregation) {
  const ExprNode& x = e.nodes[n];
  if (is_aggr_call(x)) return;  // its virtual table's cube folds its own
  const bool aggregation = x.kind == ExprNode::Kind::kAgg;
  if (!(aggregation && inside_aggregation && x.total)) {
    for (const std::uint32_t a : x.args) fold_inner_totals(e, a, inside_aggregation || aggregation);
    return;
  }
  const std::string& text = e.text;
  // The listed fields that are dimensions here keep grouping; the others do not restrict (§4).
  std::vector<std::uint8_t> keep(dims_.size(), 0);
  HypercubeSpec spec;
  for (std::size_t i = 0; i < x.total_fields.size(); ++i) {
    if (data_.find_field(x.total_fields[i]) < 0)
      fail(text, x.total_positions[i], "unknown field '" + x.total_fields[i] + "' in TOTAL <…>");
    for (std::size_t d = 0; d < dims_.size(); ++d)
      if (cube_->spec_.dimensions[d] == x.total_fields[i] && !keep[d]) keep[d] = 1;
  }
  for (std::size_t d = 0; d < dims_.size(); ++d)
    if (keep[d]) spec.dimensions.push_back(cube_->spec_.dimensions[d]);
  spec.measures.emplace_back("#total");
  std::vector<std::pair<Expression, std::uint32_t>> exprs;
  exprs.emplace_back(e, n);
  exprs.back().first.nodes[n].total = false;
  exprs.back().first.nodes[n].total_fields.clear();
  Nested nested;
  nested.exprs = std::move(exprs);
  nested.scopes.push_back(scope_[n]);
  const std::shared_ptr<Hypercube> v =
      HypercubeBuilder(model_, state_, spec, rows_, states_, state_name_, std::move(nested)).run();
  if (!spec.dimensions.empty()) {
    // A value per combination of the kept dimensions, read per chart row.
    RowLookup lookup;
    lookup.keep = std::move(keep);
    lookup.empty = empty_aggregate(find_aggregate_function(x.name)->kind);
    lookup.all = v->total_value(0);
    for (std::size_t r = 0; r < v->size(); ++r) {
      std::uint64_t key = 0;
      std::size_t j = 0;
      for (std::size_t d = 0; d < dims_.size(); ++d) {
        if (!lookup.keep[d]) continue;
        const std::uint32_t code = v->codes(j++)[r];
        key += (code == kNull ? 0 : std::uint64_t{code} + 1) * dims_[d].stride;
      }
      lookup.values.emplace(key, cube_value(data_, *v, 0, r));
    }
    lookups_.emplace(n, std::move(lookup));
    return;
  }
  ExprNode& folded = e.nodes[n];
  folded.value = v->size() > 0 ? cube_value(data_, *v, 0, 0) : Value::null();
  folded.kind = ExprNode::Kind::kConst;
  folded.args.clear();
  folded.set = -1;
  folded.total = false;
}

void HypercubeBuilder::mark_scopes(const std::string& text, const Expression& e, std::uint32_t n,
                                   const std::shared_ptr<const SetNode>& outer) {
  const ExprNode& x = e.nodes[n];
  scope_[n] = outer;
  if (x.kind == ExprNode::Kind::kScoped) {
    const ExprNode& sn = e.nodes[x.args[0]];
    const auto inner = inherit_set(outer, parse_set_expression(text, sn.name, sn.position + 1));
    mark_scopes(text, e, x.args[1], inner);
    return;
  }
  for (const std::uint32_t a : x.args) mark_scopes(text, e, a, outer);
}

std::uint32_t HypercubeBuilder::intern_set(const std::shared_ptr<const SetNode>& set) {
  if (!set) return 0;
  // A lone `$` is the default state: the object's own when that is the default.
  if (set->kind == SetNode::Kind::kTerm && set->modifiers.empty() &&
      (set->ident.empty() || (set->ident == "$" && state_name_ == "$")))
    return 0;
  const std::string key = canonical_set(*set);
  auto [it, added] = set_index_.emplace(key, static_cast<std::uint32_t>(sets_.size()));
  if (added) {
    sets_.push_back(set);
    set_texts_.push_back(nested_.exprs.empty() ? cube_->spec_.measures[measures_.size()]
                                               : nested_.exprs[measures_.size()].first.text);
  }
  return it->second;
}

void HypercubeBuilder::evaluate_sets() {
  set_rows_.assign(sets_.size(), rows_);
  for (std::size_t i = 1; i < sets_.size(); ++i) {
    SetEvaluator ev(model_, *states_, state_name_, set_texts_[i], &state_, rows_);
    set_rows_[i] = ev.rows(*sets_[i]);
  }
}

bool HypercubeBuilder::is_shift_call(const ExprNode& x) {
  if (x.kind != ExprNode::Kind::kCall) return false;
  const InterRecordFunction* f = find_inter_record_function(x.name);
  return f != nullptr && is_shift(f->kind);
}

bool HypercubeBuilder::is_range_over_rows(const Expression& e, std::uint32_t n) {
  const ExprNode& x = e.nodes[n];
  if (x.kind != ExprNode::Kind::kCall || lower(x.name).rfind("range", 0) != 0) return false;
  return std::any_of(x.args.begin(), x.args.end(), [&](std::uint32_t a) { return is_shift_call(e.nodes[a]); });
}

Plan HypercubeBuilder::bind_measure(const std::string& text, const Expression& e, std::uint32_t root, MeasurePlan& plan,
                                    bool in_window) {
  return Plan::bind(
      e, root,
      [&](std::uint32_t n) -> std::uint32_t {
        const ExprNode& x = e.nodes[n];
        if (x.kind == ExprNode::Kind::kSet || x.kind == ExprNode::Kind::kScoped)
          fail(text, x.position, "a set expression stands only at the start of an aggregation or of a scope");
        if (x.kind == ExprNode::Kind::kStar) fail(text, x.position, "'*' stands only in Count(*)");
        MeasureInput in;
        if (x.kind == ExprNode::Kind::kField) {
          // A field outside any aggregation reads as Only(field) for the row (§1.3).
          in = fast_input(AggFunc::kOnly, field_index(text, x), intern_set(scope_[n]));
        } else if (is_aggr_call(x)) {
          in.aggr = plan_aggr_term(text, e, n, n, intern_set(scope_[n]));
        } else if (x.kind == ExprNode::Kind::kCall) {
          if (in_window)
            fail(text, x.position, "an inter-record function (" + x.name + ") inside the argument of another is not supported");
          Window w = plan_window(text, e, n, plan, false);
          plan.windows.push_back(std::move(w));
          in.window = static_cast<std::int32_t>(plan.windows.size() - 1);
        } else {
          in = plan_aggregation(text, e, n);
        }
        plan.inputs.push_back(in);
        return static_cast<std::uint32_t>(plan.inputs.size() - 1);
      },
      [&](std::uint32_t n) { return is_range_over_rows(e, n); });
}

bool HypercubeBuilder::is_constant(const Expression& e, std::uint32_t n) {
  const ExprNode& x = e.nodes[n];
  if (x.kind == ExprNode::Kind::kField || x.kind == ExprNode::Kind::kAgg || x.kind == ExprNode::Kind::kStar ||
      x.kind == ExprNode::Kind::kSet || (x.kind == ExprNode::Kind::kCall && find_scalar_function(x.name) == nullptr))
    return false;
  return std::all_of(x.args.begin(), x.args.end(), [&](std::uint32_t a) { return is_constant(e, a); });
}

double HypercubeBuilder::constant_arg(const std::string& text, const Expression& e, std::uint32_t node,
                                      const std::string& what) const {
  const Plan p = Plan::bind(e, node, [&](std::uint32_t leaf) -> std::uint32_t {
    fail(text, e.nodes[leaf].position, what + " must be a constant");
  });
  const double v = numeric_of(p.constant());
  if (std::isnan(v)) fail(text, e.nodes[node].position, what + " must be a number");
  return v;
}

}  // namespace assoc
