#include "assoc/hypercube.hpp"

#include <algorithm>
#include <ranges>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include <unordered_map>

#include "assoc/calculated_dimension.hpp"
#include "assoc/error.hpp"
#include "assoc/expression_plan.hpp"
#include "assoc/functions.hpp"
#include "assoc/hypercube_aggregate.hpp"
#include "assoc/inter_record.hpp"
#include "assoc/result_cache.hpp"

namespace assoc {

using detail::AggFunc;
using detail::DimPlace;
using detail::JoinWalker;
using detail::LinkGraph;
using detail::NodeAggregates;
using detail::RootedTree;
using detail::Term;
using Slot = std::pair<std::uint32_t, std::uint32_t>;  // a node and a record set

namespace {

constexpr std::uint32_t kHypercubeCacheKind = 0x48430001U;  // the model's hypercubes

void encode_string(const std::string& s, std::vector<std::uint32_t>& out) {
  out.push_back(static_cast<std::uint32_t>(s.size()));
  for (std::size_t i = 0; i < s.size(); i += 4) {
    std::uint32_t w = 0;
    for (std::size_t j = i; j < std::min(s.size(), i + 4); ++j)
      w |= std::uint32_t{static_cast<unsigned char>(s[j])} << (8 * (j - i));
    out.push_back(w);
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An aggregation the per-node accumulators cannot compute (an expression argument, TOTAL, a
// function beyond Sum/Count/Avg/Min/Max/Only): its arguments are evaluated per record of its
// node (once per distinct value when they read one field) and reduced by the registry.
struct GenericTerm {
  const AggregateFunction* fn = nullptr;
  bool distinct = false;
  bool total = false;
  std::vector<std::uint8_t> keep_dim;  // TOTAL <…>: per chart dimension, 1 when it still groups
  std::vector<std::uint32_t> fields;   // the record inputs of the plans
  Plan value;
  Plan weight;
  bool has_weight = false;
  std::vector<Value> params;  // constant arguments by position (NULL for the record ones)
};

// Per generic term, its value per group key and over every record once.
struct GenericResults {
  std::vector<std::uint64_t> keys;  // the keys the records of non-TOTAL terms reach
  std::vector<std::unordered_map<std::uint64_t, Value>> values;
  std::vector<Value> totals;
};

// One input of a measure's plan: an aggregation at a node, fast or generic; or an
// aggregation over Aggr results (aggr >= 0); or an inter-record function (window >= 0).
struct MeasureInput {
  std::uint32_t node = 0;
  std::size_t term = 0;
  bool generic = false;
  std::uint32_t set = 0;  // the record set it reads: 0 the object's state, else a set expression
  std::int32_t aggr = -1;
  std::int32_t window = -1;
};

// An aggregation over Aggr results, or a bare Aggr (read as Only): its virtual table is a
// nested hypercube over the Aggr dimensions whose measures are the Aggr expressions, joined
// back to the chart rows on the dimension codes (through the data when the chart has
// dimensions the Aggr lacks: each virtual row in its first chart row, or in all of them with
// NODISTINCT). Its plans read the Aggr values, then the Aggr dimensions' values, per virtual row.
struct AggrTerm {
  AggKind kind = AggKind::kOnly;
  bool distinct = false;
  bool nodistinct = false;
  std::vector<std::string> dims;
  std::vector<std::string> sorts;  // per dimension: "asc", "desc", "load" or "" (default)
  std::vector<std::uint32_t> dim_fields;
  std::vector<std::uint32_t> aggr_nodes;
  std::vector<std::size_t> field_dims;  // plan inputs after the Aggr values: their dimension
  Plan value;
  Plan weight;
  bool has_weight = false;
  std::vector<Value> params;
};

// An inter-record function of a measure (§5), or a Range function over such functions.
struct Window {
  InterRecordKind kind = InterRecordKind::kRowNo;
  bool total = false;
  Plan arg;  // over the measure's inputs
  std::int64_t offset = 1;
  std::int64_t count = 1;
  Plan count_plan;  // a count given per row
  bool dynamic_count = false;
  int mode = 0;
  int fmt = 0;
  std::size_t column = 0;
  // A Range function whose arguments are windows (count values each) or plans.
  const ScalarFunction* range = nullptr;
  std::vector<std::int32_t> range_windows;  // per argument: index in `parts`, or -1 for a plan
  std::vector<Plan> range_plans;
  std::vector<Window> parts;
};

// A measure: its syntax tree, its plan over aggregation results, and where each input is computed.
struct MeasurePlan {
  Expression expr;
  Plan plan;
  std::vector<MeasureInput> inputs;
  std::vector<Window> windows;
};

Value symbol_value(const SymbolTable& symbols, std::uint32_t code) {
  if (code == kNull || code >= symbols.size()) return Value::null();
  Value v;
  v.num = symbols.number(code);
  if (symbols.has_text(code)) {
    v.text = std::string(symbols.text(code));
    v.has_text = true;
  }
  return v;
}

}  // namespace

std::vector<std::uint32_t> HypercubeSpec::encode() const {
  std::vector<std::uint32_t> out;
  out.push_back(static_cast<std::uint32_t>(dimensions.size()));
  for (const auto& d : dimensions) encode_string(d, out);
  out.push_back(static_cast<std::uint32_t>(measures.size()));
  for (const auto& m : measures) encode_string(m, out);
  out.push_back(static_cast<std::uint32_t>(sort.size()));
  for (const auto& [column, order] : sort) {
    encode_string(column, out);
    encode_string(order, out);
  }
  out.push_back((suppress_zero ? 1U : 0U) | (suppress_missing ? 2U : 0U));
  return out;
}

std::size_t Hypercube::byte_size() const {
  std::size_t n = sizeof(*this);
  for (const auto& c : codes_) n += c.capacity() * sizeof(std::uint32_t);
  for (const auto& v : values_) n += v.capacity() * sizeof(double);
  for (const auto& s : only_symbols_) n += s.capacity() * sizeof(std::uint32_t);
  for (const auto& t : texts_) {
    n += t.capacity() * sizeof(std::string);
    for (const auto& x : t) n += x.capacity();
  }
  for (const auto& f : text_flags_) n += f.capacity();
  return n;
}

class HypercubeBuilder {
 public:
  HypercubeBuilder(const AssociativeModel& model, const SelectionState& state, const HypercubeSpec& spec,
                   std::shared_ptr<const RowStates> rows, const NamedStates* states, std::string state_name)
      : model_(model), data_(model.data()), state_(state), graph_(model), cube_(std::make_shared<Hypercube>()),
        rows_(std::move(rows)), states_(states), state_name_(std::move(state_name)) {
    cube_->spec_ = spec;
    if (!states_) {
      own_states_.emplace("$", state_);
      states_ = &own_states_;
      state_name_ = "$";
    }
  }
  // A nested cube (an Aggr's virtual table): its measures are subtrees of parsed expressions.
  // It reads the states of the cube that holds it.
  HypercubeBuilder(const AssociativeModel& model, const SelectionState& state, const HypercubeSpec& spec,
                   std::shared_ptr<const RowStates> rows, const NamedStates* states, std::string state_name,
                   std::vector<std::pair<Expression, std::uint32_t>> exprs)
      : HypercubeBuilder(model, state, spec, std::move(rows), states, std::move(state_name)) {
    nested_exprs_ = std::move(exprs);
  }

  std::shared_ptr<Hypercube> run() {
    const HypercubeSpec& spec = cube_->spec_;
    if (spec.dimensions.empty() && spec.measures.empty())
      throw Error("a hypercube needs at least one dimension or measure");
    place_dimensions();
    plan_measures();
    if (!rows_) rows_ = model_.rows(state_);
    evaluate_sets();

    std::map<Slot, NodeAggregates> by_node;
    for (auto& [slot, terms] : terms_) {
      const std::uint32_t node = slot.first;
      const RowStates& rows = *set_rows_[slot.second];
      const std::size_t p = part_of_node(node);
      const RootedTree tree(graph_, node, dim_nodes_);
      JoinWalker walker(model_, rows, graph_, tree, p == kNoPart ? no_dims_ : parts_[p].dims, false);
      by_node.emplace(slot, detail::aggregate_node(model_, rows, walker, terms, p == kNoPart ? 1 : parts_[p].space));
    }

    std::map<Slot, GenericResults> generic_by_node;
    for (auto& [slot, terms] : generic_) generic_by_node.emplace(slot, run_generic(slot, terms));
    std::map<std::uint32_t, std::vector<std::uint64_t>> reached;
    for (const auto& [slot, agg] : by_node) reached[slot.first].insert(reached[slot.first].end(), agg.keys.begin(), agg.keys.end());
    for (const auto& [slot, res] : generic_by_node) {
      const bool grouped = std::any_of(generic_.at(slot).begin(), generic_.at(slot).end(),
                                       [](const GenericTerm& t) { return !t.total; });
      if (grouped) reached[slot.first].insert(reached[slot.first].end(), res.keys.begin(), res.keys.end());
    }
    std::vector<std::uint64_t> keys = row_keys(reached);
    if (spec.suppress_missing) std::erase_if(keys, [&](std::uint64_t k) { return has_none(k); });
    for (const AggrTerm& t : aggr_terms_) compute_aggr(t, keys);

    // Each aggregation's value per row, then each measure by its plan.
    struct Deferred {
      std::size_t m;
      std::vector<std::vector<Value>> columns;
      std::vector<Value> totals;
    };
    std::vector<Deferred> deferred;
    const std::size_t n_measures = measures_.size();
    cube_->values_.resize(n_measures);
    cube_->only_fields_.assign(n_measures, kNull);
    cube_->only_symbols_.resize(n_measures);
    cube_->totals_.resize(n_measures);
    cube_->total_symbols_.assign(n_measures, kNull);
    cube_->texts_.assign(n_measures, {});
    cube_->text_flags_.assign(n_measures, {});
    cube_->total_values_.assign(n_measures, Value::null());
    for (std::size_t m = 0; m < n_measures; ++m) {
      const MeasurePlan& plan = measures_[m];
      const std::int64_t single = plan.plan.single_input();
      if (single >= 0 && !plan.inputs[static_cast<std::size_t>(single)].generic &&
          plan.inputs[static_cast<std::size_t>(single)].aggr < 0 && plan.inputs[static_cast<std::size_t>(single)].window < 0) {
        fast_measure(m, plan.inputs[static_cast<std::size_t>(single)], by_node, keys);
        continue;
      }
      // Every input as a column of values (and its total), then the plan per row.
      std::vector<std::vector<Value>> columns(plan.inputs.size());
      std::vector<Value> totals(plan.inputs.size());
      for (std::size_t i = 0; i < plan.inputs.size(); ++i)
        totals[i] = input_column(plan.inputs[i], by_node, generic_by_node, keys, columns[i]);
      if (!plan.windows.empty()) {  // computed once the rows are sorted
        cube_->values_[m].assign(keys.size(), std::nan(""));
        deferred.push_back(Deferred{m, std::move(columns), std::move(totals)});
        continue;
      }
      std::vector<Value> row(plan.inputs.size());
      store_values(
          m, keys.size(), std::views::iota(std::size_t{0}, keys.size()),
          [&](std::size_t r) {
            for (std::size_t i = 0; i < row.size(); ++i) row[i] = columns[i][r];
            return plan.plan.eval(row.data());
          },
          plan.plan.eval(totals.data()));
    }

    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Zero suppression looks at the measures without inter-record functions (those depend
    // on the rows shown).
    const bool any_plain = std::any_of(measures_.begin(), measures_.end(), [](const MeasurePlan& p) { return p.windows.empty(); });
    if (spec.suppress_zero && any_plain) {
      std::erase_if(order, [&](std::size_t r) {
        for (std::size_t m = 0; m < n_measures; ++m) {
          if (!measures_[m].windows.empty()) continue;
          const double v = cube_->values_[m][r];
          if (!std::isnan(v) && v != 0) return false;
          if (!cube_->text_flags_[m].empty() && cube_->text_flags_[m][r]) return false;
          if (cube_->only_fields_[m] != kNull && cube_->only_symbols_[m][r] != kNull) return false;
        }
        return true;
      });
    }
    cube_->dim_fields_.clear();
    cube_->codes_.assign(dims_.size(), {});
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      cube_->dim_fields_.push_back(dims_[d].field);
      const std::uint64_t radix = std::uint64_t{data_.fields()[dims_[d].field].symbols.size()} + 1;
      cube_->codes_[d].reserve(keys.size());
      for (const std::uint64_t k : keys)
        cube_->codes_[d].push_back(static_cast<std::uint32_t>((k / dims_[d].stride) % radix) - 1);  // 0 -> kNull
    }
    sort_rows(order);
    for (Deferred& d : deferred) window_measure(d.m, d.columns, d.totals, order);
    apply_order(order);
    return cube_;
  }

 private:
  // Places each dimension at its node and groups the dimensions by the part of the forest
  // that holds them, parts in the order of their first dimension. A tuple key is each part's
  // key times the part's base (the product of the earlier parts' key spaces); within a part,
  // dimension d adds (symbol + 1) x its stride there. With one part, the strides are the
  // products of the earlier dimensions' symbol counts + 1.
  void place_dimensions() {
    key_space_ = 1;
    std::vector<std::size_t> part_of_dim;
    for (const std::string& name : cube_->spec_.dimensions) {
      const int f = data_.find_field(name);
      if (f < 0) throw Error("unknown dimension field '" + name + "'");
      DimPlace d;
      d.field = static_cast<std::uint32_t>(f);
      d.node = graph_.node_of_field(d.field);
      if (!graph_.is_field(d.node)) d.column = static_cast<std::uint32_t>(data_.tables()[d.node].column_of(d.field));
      const std::uint64_t radix = std::uint64_t{data_.fields()[d.field].symbols.size()} + 1;
      if (key_space_ > (std::uint64_t{1} << 62) / radix)
        throw Error("too many combinations of dimension values (the product of the fields' sizes exceeds 2^62)");
      key_space_ *= radix;
      std::size_t p = part_of_node(d.node);
      if (p == kNoPart) {
        p = parts_.size();
        parts_.emplace_back();
        parts_.back().reached = RootedTree(graph_, d.node, {}).reached;
      }
      part_of_dim.push_back(p);
      dims_.push_back(d);
      dim_nodes_.push_back(d.node);
    }
    std::uint64_t base = 1;
    for (std::size_t p = 0; p < parts_.size(); ++p) {
      Part& part = parts_[p];
      part.base = base;
      part.dims = dims_;
      for (std::size_t d = 0; d < dims_.size(); ++d) {
        part.dims[d].stride = 0;  // another part's dimension: never reached from this one
        if (part_of_dim[d] != p) continue;
        part.dims[d].stride = part.space;
        dims_[d].stride = base * part.space;
        part.space *= std::uint64_t{data_.fields()[dims_[d].field].symbols.size()} + 1;
      }
      base *= part.space;
    }
  }

  // The part holding a node's dimensions, or kNoPart when it holds none.
  std::size_t part_of_node(std::uint32_t node) const {
    for (std::size_t p = 0; p < parts_.size(); ++p)
      if (parts_[p].reached[node]) return p;
    return kNoPart;
  }

  [[noreturn]] static void fail(const std::string& text, std::size_t pos, const std::string& what) {
    throw Error("expression '" + text + "': " + what + " at position " + std::to_string(pos));
  }

  std::uint32_t field_index(const std::string& text, const ExprNode& x) const {
    const int f = data_.find_field(x.name);
    if (f < 0) fail(text, x.position, "unknown field '" + x.name + "'");
    return static_cast<std::uint32_t>(f);
  }

  // A field's column at a node: its column in a table, kIdentity at its key-field node.
  std::uint32_t column_at(std::uint32_t node, std::uint32_t field) const {
    if (graph_.is_field(node)) return detail::kIdentity;
    return static_cast<std::uint32_t>(data_.tables()[node].column_of(field));
  }

  MeasureInput fast_input(AggFunc func, std::uint32_t field, std::uint32_t set) {
    const std::uint32_t node = graph_.node_of_field(field);
    Term term;
    term.func = func;
    term.field = field;
    term.column = column_at(node, field);
    auto& terms = terms_[Slot{node, set}];
    std::size_t index = 0;
    while (index < terms.size() && !(terms[index].func == term.func && terms[index].field == term.field)) ++index;
    if (index == terms.size()) terms.push_back(term);
    return MeasureInput{node, index, false, set};
  }

  // Throws for what may not stand inside an aggregation's argument (this phase): another
  // aggregation, a set expression.
  void check_argument(const std::string& text, const Expression& e, std::uint32_t n) const {
    const ExprNode& x = e.nodes[n];
    if (x.kind == ExprNode::Kind::kAgg)
      fail(text, x.position,
           "an aggregation inside another aggregation (" + x.name +
               ") needs Aggr: write e.g. Sum(Aggr(Sum(X), Dim)); TOTAL inside an aggregation is not yet supported");
    if (x.kind == ExprNode::Kind::kCall && find_inter_record_function(x.name) != nullptr)
      fail(text, x.position, "an inter-record function (" + x.name + ") inside an aggregation; it reads chart rows, not records");
    if (x.kind == ExprNode::Kind::kSet || x.kind == ExprNode::Kind::kScoped)
      fail(text, x.position, "a set expression inside an aggregation's argument is not supported; write it first in the aggregation");
    for (const std::uint32_t a : x.args) check_argument(text, e, a);
  }

  void collect_fields(const std::string& text, const Expression& e, std::uint32_t n,
                      std::vector<std::pair<std::uint32_t, std::size_t>>& out) const {
    const ExprNode& x = e.nodes[n];
    if (x.kind == ExprNode::Kind::kField) {
      const std::uint32_t f = field_index(text, x);
      if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.first == f; })) out.emplace_back(f, x.position);
    }
    for (const std::uint32_t a : x.args) collect_fields(text, e, a, out);
  }

  // The node whose records an aggregation of these fields reads: the one table holding them
  // all (a key field alone: its key-field node; no field: the largest table).
  std::uint32_t node_for(const std::string& text, const ExprNode& agg,
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

  MeasureInput plan_aggregation(const std::string& text, const Expression& e, std::uint32_t n) {
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
      if (set != 0) fail(text, x.position, "a set expression on an aggregation over Aggr is not yet supported");
      MeasureInput in;
      in.aggr = plan_aggr_term(text, e, n, static_cast<std::uint32_t>(first));
      return in;
    }
    for (const std::uint32_t a : x.args) check_argument(text, e, a);
    const ExprNode& arg = e.nodes[x.args[0]];
    const bool star = arg.kind == ExprNode::Kind::kStar;
    // The accumulators' own functions over a plain field.
    if (!x.total && !star && arg.kind == ExprNode::Kind::kField && x.args.size() == 1) {
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
      if (func && (!key || *func == AggFunc::kCountDistinct || *func == AggFunc::kOnly))
        return fast_input(*func, field, set);
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
    auto record_input = [&](std::uint32_t leaf) -> std::uint32_t {
      const ExprNode& y = e.nodes[leaf];
      if (y.kind == ExprNode::Kind::kStar) return 0;  // Count(*): a constant per record, below
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
    auto& terms = generic_[Slot{node, set}];
    terms.push_back(std::move(term));
    return MeasureInput{node, terms.size() - 1, true, set};
  }

  void plan_measures() {
    const std::vector<std::string>& texts = cube_->spec_.measures;
    for (std::size_t m = 0; m < texts.size(); ++m) {
      MeasurePlan plan;
      std::uint32_t root = 0;
      if (nested_exprs_.empty()) {
        plan.expr = parse_expression(texts[m]);
        root = plan.expr.root;
      } else {
        plan.expr = nested_exprs_[m].first;
        root = nested_exprs_[m].second;
      }
      const Expression& e = plan.expr;
      scope_.assign(e.nodes.size(), nullptr);
      mark_scopes(e.text, e, root, nullptr);
      plan.plan = bind_measure(e.text, e, root, plan, false);
      measures_.push_back(std::move(plan));
    }
  }

  // Per node, the outer set of its scope (§2.8): a scope's set inherits its enclosing one.
  void mark_scopes(const std::string& text, const Expression& e, std::uint32_t n,
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

  // The number of a record set (0: the object's state).
  std::uint32_t intern_set(const std::shared_ptr<const SetNode>& set) {
    if (!set) return 0;
    // A lone `$` is the default state: the object's own when that is the default.
    if (set->kind == SetNode::Kind::kTerm && set->modifiers.empty() &&
        (set->ident.empty() || (set->ident == "$" && state_name_ == "$")))
      return 0;
    const std::string key = canonical_set(*set);
    auto [it, added] = set_index_.emplace(key, static_cast<std::uint32_t>(sets_.size()));
    if (added) {
      sets_.push_back(set);
      set_texts_.push_back(cube_->spec_.measures[measures_.size()]);
    }
    return it->second;
  }

  // Each record set's possible rows, once per distinct set.
  void evaluate_sets() {
    set_rows_.assign(sets_.size(), rows_);
    for (std::size_t i = 1; i < sets_.size(); ++i) {
      SetEvaluator ev(model_, *states_, state_name_, set_texts_[i]);
      set_rows_[i] = ev.rows(*sets_[i]);
    }
  }

  static bool is_aggr_call(const ExprNode& x) { return x.kind == ExprNode::Kind::kCall && lower(x.name) == "aggr"; }

  // An inter-record function that reads other rows (Above, Below, Top, Bottom).
  static bool is_shift_call(const ExprNode& x) {
    if (x.kind != ExprNode::Kind::kCall) return false;
    const InterRecordFunction* f = find_inter_record_function(x.name);
    return f != nullptr && (f->kind == InterRecordKind::kAbove || f->kind == InterRecordKind::kBelow ||
                            f->kind == InterRecordKind::kTop || f->kind == InterRecordKind::kBottom);
  }

  // A Range function with an Above/Below/Top/Bottom argument: it reads several rows.
  static bool is_range_over_rows(const Expression& e, std::uint32_t n) {
    const ExprNode& x = e.nodes[n];
    if (x.kind != ExprNode::Kind::kCall || lower(x.name).rfind("range", 0) != 0) return false;
    return std::any_of(x.args.begin(), x.args.end(), [&](std::uint32_t a) { return is_shift_call(e.nodes[a]); });
  }

  // Binds an expression at measure level: aggregations, bare fields (Only), Aggr, and the
  // inter-record functions (not inside another's argument: `in_window`).
  Plan bind_measure(const std::string& text, const Expression& e, std::uint32_t root, MeasurePlan& plan, bool in_window) {
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
            in.aggr = plan_aggr_term(text, e, n, n);
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

  static bool is_constant(const Expression& e, std::uint32_t n) {
    const ExprNode& x = e.nodes[n];
    if (x.kind == ExprNode::Kind::kField || x.kind == ExprNode::Kind::kAgg || x.kind == ExprNode::Kind::kStar ||
        x.kind == ExprNode::Kind::kSet || (x.kind == ExprNode::Kind::kCall && find_scalar_function(x.name) == nullptr))
      return false;
    return std::all_of(x.args.begin(), x.args.end(), [&](std::uint32_t a) { return is_constant(e, a); });
  }

  double constant_arg(const std::string& text, const Expression& e, std::uint32_t node, const std::string& what) const {
    const Plan p = Plan::bind(e, node, [&](std::uint32_t leaf) -> std::uint32_t {
      fail(text, e.nodes[leaf].position, what + " must be a constant");
    });
    const double v = numeric_of(p.constant());
    if (std::isnan(v)) fail(text, e.nodes[node].position, what + " must be a number");
    return v;
  }

  // An inter-record function, or a Range function over them (§5).
  Window plan_window(const std::string& text, const Expression& e, std::uint32_t n, MeasurePlan& plan, bool in_range) {
    const ExprNode& x = e.nodes[n];
    Window w;
    const InterRecordFunction* f = find_inter_record_function(x.name);
    if (f == nullptr) {  // a Range function reading several rows
      w.range = find_scalar_function(x.name);
      for (const std::uint32_t a : x.args) {
        if (is_shift_call(e.nodes[a])) {
          w.range_windows.push_back(static_cast<std::int32_t>(w.parts.size()));
          w.parts.push_back(plan_window(text, e, a, plan, true));
        } else {
          w.range_windows.push_back(-1 - static_cast<std::int32_t>(w.range_plans.size()));
          w.range_plans.push_back(bind_measure(text, e, a, plan, true));
        }
      }
      return w;
    }
    w.kind = f->kind;
    w.total = x.total;
    const std::string name = f->name;
    switch (w.kind) {
      case InterRecordKind::kAbove:
      case InterRecordKind::kBelow:
      case InterRecordKind::kTop:
      case InterRecordKind::kBottom:
        w.arg = bind_measure(text, e, x.args[0], plan, true);
        w.offset = w.kind == InterRecordKind::kAbove || w.kind == InterRecordKind::kBelow ? 1 : 0;
        if (x.args.size() > 1) w.offset = static_cast<std::int64_t>(constant_arg(text, e, x.args[1], "the offset of " + name));
        if (x.args.size() > 2 && in_range && !is_constant(e, x.args[2])) {
          // A count per row (RangeSum(Above(Sum(X), 0, RowNo()))): a plan over the measure's inputs.
          w.count_plan = bind_measure(text, e, x.args[2], plan, false);
          w.dynamic_count = true;
        } else if (x.args.size() > 2) {
          w.count = static_cast<std::int64_t>(constant_arg(text, e, x.args[2], "the count of " + name));
        }
        if (w.count < 1 || w.count > 1000000) fail(text, e.nodes[x.args[2]].position, "the count of " + name + " must be 1 or more");
        if (w.count > 1 && !in_range)
          fail(text, x.position, name + " with a count gives several values: use it inside a Range function (RangeSum, …)");
        break;
      case InterRecordKind::kRank:
        w.arg = bind_measure(text, e, x.args[0], plan, true);
        if (x.args.size() > 1) w.mode = static_cast<int>(constant_arg(text, e, x.args[1], "the mode of Rank"));
        if (x.args.size() > 2) w.fmt = static_cast<int>(constant_arg(text, e, x.args[2], "the format of Rank"));
        if (w.mode < 0 || w.mode > 4) fail(text, e.nodes[x.args[1]].position, "the mode of Rank is 0 to 4");
        if (w.fmt < 0 || w.fmt > 2) fail(text, e.nodes[x.args[2]].position, "the format of Rank is 0 to 2");
        break;
      case InterRecordKind::kColumn: {
        const double c = constant_arg(text, e, x.args[0], "the column of Column");
        if (c < 1 || c > static_cast<double>(cube_->spec_.measures.size()) || c != std::floor(c))
          fail(text, e.nodes[x.args[0]].position,
               "Column(n) names a measure column, 1 to " + std::to_string(cube_->spec_.measures.size()));
        w.column = static_cast<std::size_t>(c) - 1;
        break;
      }
      default: break;
    }
    return w;
  }

  // An aggregation over Aggr results (`agg` its node), or a bare Aggr (agg == aggr node).
  std::int32_t plan_aggr_term(const std::string& text, const Expression& e, std::uint32_t agg, std::uint32_t first_aggr) {
    const ExprNode& a = e.nodes[agg];
    AggrTerm t;
    const ExprNode* aggr = nullptr;
    std::vector<std::uint32_t> value_args;
    if (is_aggr_call(a)) {
      t.kind = AggKind::kOnly;
      aggr = &a;
    } else {
      const AggregateFunction& fn = *find_aggregate_function(a.name);
      t.kind = fn.kind;
      t.distinct = a.distinct;
      aggr = &e.nodes[first_aggr];
      if (a.total) fail(text, a.position, "TOTAL on an aggregation over Aggr is not supported");
    }
    if (aggr->set >= 0) fail(text, e.nodes[static_cast<std::size_t>(aggr->set)].position, "a set expression inside Aggr is not yet supported");
    t.nodistinct = aggr->nodistinct;
    for (std::size_t i = 1; i < aggr->args.size(); ++i) {
      const ExprNode& d = e.nodes[aggr->args[i]];
      const int f = data_.find_field(d.name);
      if (f < 0) fail(text, d.position, "unknown field '" + d.name + "' as an Aggr dimension");
      t.dims.push_back(d.name);
      t.dim_fields.push_back(static_cast<std::uint32_t>(f));
      t.sorts.push_back(aggr_sort(text, d));
    }
    // Each leaf of the outer plans: an Aggr with the same dimensions, or one of its dimensions.
    std::vector<std::pair<std::uint32_t, std::size_t>> fields;  // leaf node -> dimension
    auto leaf = [&](std::uint32_t n) -> std::uint32_t {
      const ExprNode& y = e.nodes[n];
      if (is_aggr_call(y)) {
        bool same = y.args.size() == aggr->args.size() && y.nodistinct == aggr->nodistinct;
        for (std::size_t i = 1; same && i < y.args.size(); ++i)
          same = e.nodes[y.args[i]].name == e.nodes[aggr->args[i]].name && e.nodes[y.args[i]].sort == e.nodes[aggr->args[i]].sort;
        if (!same) fail(text, y.position, "the Aggr calls of one aggregation must have the same dimensions");
        t.aggr_nodes.push_back(n);
        return static_cast<std::uint32_t>(t.aggr_nodes.size() - 1);
      }
      if (y.kind == ExprNode::Kind::kField) {
        const int f = data_.find_field(y.name);
        const auto it = std::find(t.dim_fields.begin(), t.dim_fields.end(), static_cast<std::uint32_t>(f));
        if (f < 0 || it == t.dim_fields.end())
          fail(text, y.position,
               "field '" + y.name + "' beside Aggr in " + a.name + ": an aggregation over Aggr reads only the Aggr values and its dimensions");
        fields.emplace_back(n, static_cast<std::size_t>(it - t.dim_fields.begin()));
        return kFieldInput + static_cast<std::uint32_t>(fields.size() - 1);
      }
      if (y.kind == ExprNode::Kind::kAgg)
        fail(text, y.position, "an aggregation inside another aggregation (" + y.name + ") needs Aggr or TOTAL");
      fail(text, y.position, "'" + y.name + "' cannot stand beside Aggr in an aggregation");
    };
    if (is_aggr_call(a)) {
      t.aggr_nodes.push_back(agg);
      Expression one;
      ExprNode in;
      in.kind = ExprNode::Kind::kField;  // bound to input 0 below
      one.nodes.push_back(in);
      t.value = Plan::bind(one, 0, [](std::uint32_t) -> std::uint32_t { return 0; });
    } else {
      const AggregateFunction& fn = *find_aggregate_function(a.name);
      t.value = Plan::bind(e, a.args[0], leaf);
      t.params.assign(a.args.size(), Value::null());
      for (std::size_t i = 1; i < a.args.size(); ++i) {
        if (static_cast<std::int8_t>(i) == fn.weight_arg) {
          t.weight = Plan::bind(e, a.args[i], leaf);
          t.has_weight = true;
        } else {
          t.params[i] = Value::number(constant_arg(text, e, a.args[i], std::string("argument ") + std::to_string(i + 1) + " of " + fn.name));
        }
      }
    }
    // Field inputs come after the Aggr values: renumber them now the count is known.
    for (const auto& [node, d] : fields) t.field_dims.push_back(d);
    const auto n_aggr = static_cast<std::uint32_t>(t.aggr_nodes.size());
    t.value.shift_inputs(kFieldInput, n_aggr);
    if (t.has_weight) t.weight.shift_inputs(kFieldInput, n_aggr);
    aggr_terms_.push_back(std::move(t));
    return static_cast<std::int32_t>(aggr_terms_.size() - 1);
  }
  static constexpr std::uint32_t kFieldInput = 1U << 30;

  // The first Aggr call in an aggregation's arguments (not inside another aggregation), or -1.
  static std::int64_t find_aggr(const Expression& e, std::uint32_t agg) {
    std::vector<std::uint32_t> todo(e.nodes[agg].args.rbegin(), e.nodes[agg].args.rend());
    while (!todo.empty()) {
      const std::uint32_t n = todo.back();
      todo.pop_back();
      const ExprNode& x = e.nodes[n];
      if (is_aggr_call(x)) return n;
      if (x.kind == ExprNode::Kind::kAgg) continue;
      todo.insert(todo.end(), x.args.rbegin(), x.args.rend());
    }
    return -1;
  }

  // An Aggr dimension's sort words as a sort direction of the nested cube.
  std::string aggr_sort(const std::string& text, const ExprNode& d) const {
    if (d.sort.empty()) return "";
    const std::string w = lower(d.sort);
    const bool desc = w.find("descending") != std::string::npos || w.find("reverse") != std::string::npos ||
                      w.find("z2a") != std::string::npos;
    if (w.find("frequency") != std::string::npos) fail(text, d.position, "FREQUENCY sorting of an Aggr dimension is not supported");
    if (w.find("load_order") != std::string::npos) {
      if (desc) fail(text, d.position, "LOAD_ORDER DESCENDING sorting of an Aggr dimension is not supported");
      return "load";
    }
    if (w.find("numeric") == std::string::npos && w.find("text") == std::string::npos)
      fail(text, d.position, "sort words '" + d.sort + "': use NUMERIC, TEXT or LOAD_ORDER with ASCENDING or DESCENDING");
    return desc ? "desc" : "asc";
  }

  // The key a row (or a record) has at a node once TOTAL <…> keeps only some dimensions:
  // `key` is in the part's key space.
  std::uint64_t project(std::uint64_t key, std::size_t p, const std::vector<std::uint8_t>& keep) const {
    if (p == kNoPart) return 0;
    std::uint64_t out = 0;
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      const std::uint64_t stride = parts_[p].dims[d].stride;
      if (!keep[d] || stride == 0) continue;
      const std::uint64_t radix = std::uint64_t{data_.fields()[dims_[d].field].symbols.size()} + 1;
      out += (key / stride) % radix * stride;
    }
    return out;
  }

  // A row's key in the key space of a node's part.
  std::uint64_t part_key(std::uint64_t row_key, std::size_t p) const {
    if (p == kNoPart) return 0;
    if (parts_.size() <= 1) return row_key;
    return row_key / parts_[p].base % parts_[p].space;
  }

  // The generic terms of one node: each possible record's argument values, gathered per
  // group key it reaches (projected for TOTAL <…>), then reduced per group and over all.
  GenericResults run_generic(Slot slot, const std::vector<GenericTerm>& terms) {
    const std::uint32_t node = slot.first;
    const std::size_t p = part_of_node(node);
    const RootedTree tree(graph_, node, dim_nodes_);
    JoinWalker walker(model_, *set_rows_[slot.second], graph_, tree, p == kNoPart ? no_dims_ : parts_[p].dims, false);
    std::vector<std::uint32_t> columns, column_fields;
    std::vector<std::vector<std::size_t>> sources(terms.size());
    for (std::size_t t = 0; t < terms.size(); ++t) {
      for (const std::uint32_t f : terms[t].fields) {
        std::size_t c = std::find(column_fields.begin(), column_fields.end(), f) - column_fields.begin();
        if (c == column_fields.size()) {
          column_fields.push_back(f);
          columns.push_back(column_at(node, f));
        }
        sources[t].push_back(c);
      }
    }
    // The walk reads at least one column (it sizes its batches by the columns it decodes).
    if (columns.empty()) columns.push_back(graph_.is_field(node) ? detail::kIdentity : 0U);
    struct Gathered {
      std::vector<Value> values, weights;
      std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> members;
      // A plan over one field: its value per symbol (+1; 0 for NULL), computed once.
      std::vector<std::uint8_t> done_value, done_weight;
      std::vector<Value> by_symbol_value, by_symbol_weight;
    };
    std::vector<Gathered> g(terms.size());
    for (std::size_t t = 0; t < terms.size(); ++t) {
      if (terms[t].fields.size() != 1) continue;
      const std::size_t n = std::size_t{data_.fields()[terms[t].fields[0]].symbols.size()} + 1;
      g[t].done_value.assign(n, 0);
      g[t].by_symbol_value.resize(n);
      if (terms[t].has_weight) {
        g[t].done_weight.assign(n, 0);
        g[t].by_symbol_weight.resize(n);
      }
    }
    GenericResults out;
    std::vector<std::uint64_t> record_keys, projected;
    std::vector<Value> inputs;
    walker.for_each_record(columns, [&](const detail::RecordBatch& b) {
      for (std::size_t i = 0; i < b.n; ++i) {
        record_keys.assign(b.keys.begin() + b.key_offsets[i], b.keys.begin() + b.key_offsets[i + 1]);
        std::sort(record_keys.begin(), record_keys.end());
        record_keys.erase(std::unique(record_keys.begin(), record_keys.end()), record_keys.end());
        for (std::size_t t = 0; t < terms.size(); ++t) {
          const GenericTerm& term = terms[t];
          Gathered& gt = g[t];
          if (term.fields.size() == 1) {
            const std::uint32_t code = b.extra[sources[t][0]][i];
            const std::size_t at = code == kNull ? 0 : std::size_t{code} + 1;
            auto eval_once = [&](std::vector<std::uint8_t>& done, std::vector<Value>& cache, const Plan& plan) {
              if (!done[at]) {
                const Value in = symbol_value(data_.fields()[term.fields[0]].symbols, code);
                cache[at] = plan.eval(&in);
                done[at] = 1;
              }
              return cache[at];
            };
            gt.values.push_back(eval_once(gt.done_value, gt.by_symbol_value, term.value));
            if (term.has_weight) gt.weights.push_back(eval_once(gt.done_weight, gt.by_symbol_weight, term.weight));
          } else {
            inputs.clear();
            for (std::size_t j = 0; j < term.fields.size(); ++j)
              inputs.push_back(symbol_value(data_.fields()[term.fields[j]].symbols, b.extra[sources[t][j]][i]));
            gt.values.push_back(term.value.eval(inputs.data()));
            if (term.has_weight) gt.weights.push_back(term.weight.eval(inputs.data()));
          }
          const auto record = static_cast<std::uint32_t>(gt.values.size() - 1);
          if (term.total && std::none_of(term.keep_dim.begin(), term.keep_dim.end(), [](std::uint8_t k) { return k; }))
            continue;  // TOTAL alone: only the grand total
          if (term.total) {
            projected.clear();
            for (const std::uint64_t k : record_keys) projected.push_back(project(k, p, term.keep_dim));
            std::sort(projected.begin(), projected.end());
            projected.erase(std::unique(projected.begin(), projected.end()), projected.end());
            for (const std::uint64_t k : projected) gt.members[k].push_back(record);
          } else {
            for (const std::uint64_t k : record_keys) gt.members[k].push_back(record);
          }
        }
        out.keys.insert(out.keys.end(), record_keys.begin(), record_keys.end());
      }
    });
    std::sort(out.keys.begin(), out.keys.end());
    out.keys.erase(std::unique(out.keys.begin(), out.keys.end()), out.keys.end());
    out.values.resize(terms.size());
    std::vector<Value> vs, ws;
    for (std::size_t t = 0; t < terms.size(); ++t) {
      const GenericTerm& term = terms[t];
      Gathered& gt = g[t];
      for (const auto& [key, members] : gt.members) {
        vs.clear();
        ws.clear();
        for (const std::uint32_t r : members) {
          vs.push_back(gt.values[r]);
          if (term.has_weight) ws.push_back(gt.weights[r]);
        }
        out.values[t].emplace(key, aggregate_values(term.fn->kind, term.distinct, vs, ws, term.params));
      }
      out.totals.push_back(gt.values.empty() ? empty_aggregate(term.fn->kind)
                                             : aggregate_values(term.fn->kind, term.distinct, gt.values, gt.weights,
                                                                term.params));
    }
    return out;
  }

  // A measure that is one fast aggregation: its numbers straight from the accumulators (and,
  // for Only, its symbols).
  void fast_measure(std::size_t m, const MeasureInput& input, const std::map<Slot, NodeAggregates>& by_node,
                    const std::vector<std::uint64_t>& keys) {
    const NodeAggregates& agg = by_node.at(Slot{input.node, input.set});
    const Term& term = terms_.at(Slot{input.node, input.set})[input.term];
    const bool only = term.func == AggFunc::kOnly;
    std::vector<double>& values = cube_->values_[m];
    values.resize(keys.size());
    if (only) {
      cube_->only_fields_[m] = term.field;
      cube_->only_symbols_[m].assign(keys.size(), kNull);
      cube_->total_symbols_[m] = agg.total_symbols[input.term];
    }
    const std::size_t p = part_of_node(input.node);
    for (std::size_t r = 0; r < keys.size(); ++r) {
      auto it = agg.group_of.find(part_key(keys[r], p));
      if (it == agg.group_of.end()) {
        values[r] = detail::empty_value(term.func);
      } else {
        values[r] = agg.values[input.term][it->second];
        if (only) cube_->only_symbols_[m][r] = agg.symbols[input.term][it->second];
      }
    }
    cube_->totals_[m] = agg.totals[input.term];
    cube_->total_values_[m] = only ? symbol_value(data_.fields()[term.field].symbols, agg.total_symbols[input.term])
                                   : Value::number(agg.totals[input.term]);
  }

  // One input of a measure as values per row; returns its total.
  Value input_column(const MeasureInput& input, const std::map<Slot, NodeAggregates>& by_node,
                     const std::map<Slot, GenericResults>& generic, const std::vector<std::uint64_t>& keys,
                     std::vector<Value>& out) const {
    if (input.aggr >= 0) {
      out = aggr_columns_[static_cast<std::size_t>(input.aggr)];
      return aggr_totals_[static_cast<std::size_t>(input.aggr)];
    }
    if (input.window >= 0) {  // filled once the rows are sorted; NULL on the totals row
      out.assign(keys.size(), Value::null());
      return Value::null();
    }
    const std::size_t p = part_of_node(input.node);
    out.resize(keys.size());
    if (input.generic) {
      const GenericTerm& term = generic_.at(Slot{input.node, input.set})[input.term];
      const GenericResults& res = generic.at(Slot{input.node, input.set});
      const bool all = term.total && std::none_of(term.keep_dim.begin(), term.keep_dim.end(), [](std::uint8_t k) { return k; });
      const auto& values = res.values[input.term];
      for (std::size_t r = 0; r < keys.size(); ++r) {
        if (all) {
          out[r] = res.totals[input.term];
          continue;
        }
        std::uint64_t k = part_key(keys[r], p);
        if (term.total) k = project(k, p, term.keep_dim);
        auto it = values.find(k);
        out[r] = it == values.end() ? empty_aggregate(term.fn->kind) : it->second;
      }
      return res.totals[input.term];
    }
    const NodeAggregates& agg = by_node.at(Slot{input.node, input.set});
    const Term& term = terms_.at(Slot{input.node, input.set})[input.term];
    const SymbolTable& symbols = data_.fields()[term.field].symbols;
    const bool only = term.func == AggFunc::kOnly;
    for (std::size_t r = 0; r < keys.size(); ++r) {
      auto it = agg.group_of.find(part_key(keys[r], p));
      if (it == agg.group_of.end()) {
        out[r] = Value::number(detail::empty_value(term.func));
      } else if (only) {
        out[r] = symbol_value(symbols, agg.symbols[input.term][it->second]);
      } else {
        out[r] = Value::number(agg.values[input.term][it->second]);
      }
    }
    return only ? symbol_value(symbols, agg.total_symbols[input.term]) : Value::number(agg.totals[input.term]);
  }

  // A row's value of measure m (Column(n)), from the cube's columns (row in key order).
  Value measure_value(std::size_t m, std::size_t r) const {
    if (cube_->only_fields_[m] != kNull)
      return symbol_value(data_.fields()[cube_->only_fields_[m]].symbols, cube_->only_symbols_[m][r]);
    if (!cube_->text_flags_[m].empty() && cube_->text_flags_[m][r]) return Value::dual(cube_->values_[m][r], cube_->texts_[m][r]);
    return Value::number(cube_->values_[m][r]);
  }

  // An Aggr term's column over the chart rows (`keys`) and its total (§4).
  void compute_aggr(const AggrTerm& t, const std::vector<std::uint64_t>& keys) {
    HypercubeSpec spec;
    spec.dimensions = t.dims;
    std::vector<std::pair<Expression, std::uint32_t>> exprs;
    const Expression& outer = aggr_expression(t);
    for (std::size_t i = 0; i < t.aggr_nodes.size(); ++i) {
      std::string name = std::to_string(i + 1);
      name.insert(name.begin(), '#');
      spec.measures.push_back(std::move(name));
      exprs.emplace_back(outer, outer.nodes[t.aggr_nodes[i]].args[0]);
    }
    for (std::size_t d = 0; d < t.dims.size(); ++d)
      if (!t.sorts[d].empty()) spec.sort.emplace_back(t.dims[d], t.sorts[d]);
    spec.suppress_missing = true;  // NULL is not a value of an Aggr dimension
    const std::shared_ptr<Hypercube> v = HypercubeBuilder(model_, state_, spec, rows_, states_, state_name_, std::move(exprs)).run();
    const std::size_t n = v->size();
    // Per virtual row, the outer plans' value and weight.
    std::vector<Value> values(n), weights(t.has_weight ? n : 0);
    std::vector<Value> in(t.aggr_nodes.size() + t.field_dims.size());
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < t.aggr_nodes.size(); ++i) {
        if (v->only_field(i) != kNull) {
          in[i] = symbol_value(data_.fields()[v->only_field(i)].symbols, v->only_symbols(i)[r]);
        } else if (const std::string* txt = v->text(i, r)) {
          in[i] = Value::dual(v->values(i)[r], *txt);
        } else {
          in[i] = Value::number(v->values(i)[r]);
        }
      }
      for (std::size_t j = 0; j < t.field_dims.size(); ++j)
        in[t.aggr_nodes.size() + j] = symbol_value(data_.fields()[t.dim_fields[t.field_dims[j]]].symbols, v->codes(t.field_dims[j])[r]);
      values[r] = t.value.eval(in.data());
      if (t.has_weight) weights[r] = t.weight.eval(in.data());
    }
    auto enc = [](std::uint32_t code) { return code == kNull ? std::uint64_t{0} : std::uint64_t{code} + 1; };
    // Each chart row's virtual rows.
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> members;
    std::vector<std::int64_t> in_aggr(dims_.size(), -1);
    bool covered = true;
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      const auto it = std::find(t.dim_fields.begin(), t.dim_fields.end(), dims_[d].field);
      if (it == t.dim_fields.end()) {
        covered = false;
      } else {
        in_aggr[d] = it - t.dim_fields.begin();
      }
    }
    if (covered) {
      for (std::size_t r = 0; r < n; ++r) {
        std::uint64_t key = 0;
        for (std::size_t d = 0; d < dims_.size(); ++d)
          key += enc(v->codes(static_cast<std::size_t>(in_aggr[d]))[r]) * dims_[d].stride;
        members[key].push_back(static_cast<std::uint32_t>(r));
      }
    } else {
      // The chart dimensions the Aggr lacks are linked to its rows through the data.
      HypercubeSpec link;
      link.dimensions = t.dims;
      std::vector<std::size_t> link_col(dims_.size());
      for (std::size_t d = 0; d < dims_.size(); ++d) {
        if (in_aggr[d] >= 0) {
          link_col[d] = static_cast<std::size_t>(in_aggr[d]);
        } else {
          link_col[d] = link.dimensions.size();
          link.dimensions.push_back(cube_->spec_.dimensions[d]);
        }
      }
      const std::shared_ptr<Hypercube> l = HypercubeBuilder(model_, state_, link, rows_, states_, state_name_).run();
      std::vector<std::uint64_t> radix;
      for (const std::uint32_t f : t.dim_fields) radix.push_back(std::uint64_t{data_.fields()[f].symbols.size()} + 1);
      auto aggr_key = [&](const Hypercube& c, std::size_t r) {
        std::uint64_t k = 0;
        for (std::size_t j = 0; j < t.dim_fields.size(); ++j) k = k * radix[j] + enc(c.codes(j)[r]);
        return k;
      };
      std::unordered_map<std::uint64_t, std::uint32_t> virtual_row;
      virtual_row.reserve(n);
      for (std::size_t r = 0; r < n; ++r) virtual_row.emplace(aggr_key(*v, r), static_cast<std::uint32_t>(r));
      std::vector<std::uint8_t> placed(n, 0);
      for (std::size_t r = 0; r < l->size(); ++r) {
        const auto it = virtual_row.find(aggr_key(*l, r));
        if (it == virtual_row.end()) continue;
        if (!t.nodistinct && placed[it->second]) continue;  // DISTINCT: in its first chart row only
        placed[it->second] = 1;
        std::uint64_t key = 0;
        for (std::size_t d = 0; d < dims_.size(); ++d) key += enc(l->codes(link_col[d])[r]) * dims_[d].stride;
        members[key].push_back(it->second);
      }
    }
    std::vector<Value> column(keys.size());
    std::vector<Value> vs, ws;
    for (std::size_t r = 0; r < keys.size(); ++r) {
      const auto it = members.find(keys[r]);
      if (it == members.end()) {
        column[r] = empty_aggregate(t.kind);
        continue;
      }
      vs.clear();
      ws.clear();
      for (const std::uint32_t i : it->second) {
        vs.push_back(values[i]);
        if (t.has_weight) ws.push_back(weights[i]);
      }
      column[r] = aggregate_values(t.kind, t.distinct, vs, ws, t.params);
    }
    aggr_columns_.push_back(std::move(column));
    aggr_totals_.push_back(n == 0 ? empty_aggregate(t.kind) : aggregate_values(t.kind, t.distinct, values, weights, t.params));
  }

  // The expression an Aggr term's nodes belong to.
  const Expression& aggr_expression(const AggrTerm& t) const {
    for (const MeasurePlan& m : measures_)
      for (const MeasureInput& in : m.inputs)
        if (in.aggr >= 0 && &aggr_terms_[static_cast<std::size_t>(in.aggr)] == &t) return m.expr;
    return measures_.back().expr;
  }

  // A measure with inter-record functions, on the sorted rows `order` (row indexes in key order).
  void window_measure(std::size_t m, std::vector<std::vector<Value>>& columns, std::vector<Value>& totals,
                      const std::vector<std::size_t>& order) {
    const MeasurePlan& plan = measures_[m];
    const std::size_t n = order.size();
    // Each position's segment [first, last): the rows sharing every dimension but the last.
    std::vector<std::size_t> seg_first(n), seg_last(n);
    for (std::size_t i = 0; i < n;) {
      std::size_t end = i + 1;
      while (end < n && same_segment(order[i], order[end])) ++end;
      for (std::size_t j = i; j < end; ++j) seg_first[j] = i, seg_last[j] = end;
      i = end;
    }
    std::vector<Value> row(plan.inputs.size());
    auto eval_at = [&](const Plan& p, std::size_t r) {
      for (std::size_t i = 0; i < row.size(); ++i) row[i] = columns[i][r];
      return p.eval(row.data());
    };
    for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
      if (plan.inputs[i].window < 0) continue;
      const Window& w = plan.windows[static_cast<std::size_t>(plan.inputs[i].window)];
      std::vector<Value>& out = columns[i];
      if (w.range != nullptr) {
        std::vector<std::vector<Value>> part_args(w.parts.size());
        for (std::size_t k = 0; k < w.parts.size(); ++k) part_args[k] = arg_column(w.parts[k], eval_at, order);
        std::vector<Value> args;
        for (std::size_t pos = 0; pos < n; ++pos) {
          args.clear();
          for (const std::int32_t a : w.range_windows) {
            if (a < 0) {
              args.push_back(eval_at(w.range_plans[static_cast<std::size_t>(-1 - a)], order[pos]));
              continue;
            }
            const Window& part = w.parts[static_cast<std::size_t>(a)];
            std::int64_t count = part.count;
            if (part.dynamic_count) {
              const double c = numeric_of(eval_at(part.count_plan, order[pos]));
              count = std::isnan(c) ? 0 : static_cast<std::int64_t>(std::clamp(c, 0.0, 1e6));
            }
            for (std::int64_t c = 0; c < count; ++c)
              args.push_back(shifted(part, part_args[static_cast<std::size_t>(a)], order, pos, c, seg_first, seg_last));
          }
          out[order[pos]] = w.range->body(args);
        }
        continue;
      }
      switch (w.kind) {
        case InterRecordKind::kRowNo:
          for (std::size_t pos = 0; pos < n; ++pos)
            out[order[pos]] = Value::number(static_cast<double>(w.total ? pos + 1 : pos - seg_first[pos] + 1));
          break;
        case InterRecordKind::kNoOfRows:
          for (std::size_t pos = 0; pos < n; ++pos)
            out[order[pos]] = Value::number(static_cast<double>(w.total ? n : seg_last[pos] - seg_first[pos]));
          break;
        case InterRecordKind::kColumn:
          if (w.column >= m && !measures_[w.column].windows.empty())
            throw Error("expression '" + plan.expr.text + "': Column(" + std::to_string(w.column + 1) +
                        ") reads a later measure that uses inter-record functions");
          for (std::size_t pos = 0; pos < n; ++pos) out[order[pos]] = measure_value(w.column, order[pos]);
          break;
        case InterRecordKind::kRank: {
          const std::vector<Value> a = arg_column(w, eval_at, order);
          std::vector<double> xs(n), ranks(n);
          std::vector<std::string> texts(n);
          std::vector<std::uint8_t> has(n);
          for (std::size_t pos = 0; pos < n; ++pos) xs[pos] = a[order[pos]].num;
          for (std::size_t pos = 0; pos < n;) {
            const std::size_t first = w.total ? 0 : seg_first[pos], last = w.total ? n : seg_last[pos];
            rank_segment(xs.data() + first, last - first, w.mode, w.fmt, ranks.data() + first, texts.data() + first,
                         has.data() + first);
            pos = last;
          }
          for (std::size_t pos = 0; pos < n; ++pos)
            out[order[pos]] = has[pos] ? Value::dual(ranks[pos], texts[pos]) : Value::number(ranks[pos]);
          break;
        }
        default: {
          const std::vector<Value> a = arg_column(w, eval_at, order);
          for (std::size_t pos = 0; pos < n; ++pos) out[order[pos]] = shifted(w, a, order, pos, 0, seg_first, seg_last);
          break;
        }
      }
    }
    store_values(
        m, cube_->values_[m].size(), order, [&](std::size_t r) { return eval_at(plan.plan, r); },
        plan.plan.eval(totals.data()));
  }

  // A measure's value per row (`rows`, indexes below `n`, in the order to evaluate them),
  // with texts kept where any row has one, and its total.
  template <class Rows, class ValueAt>
  void store_values(std::size_t m, std::size_t n, const Rows& rows, ValueAt&& value_at, Value total) {
    std::vector<double>& values = cube_->values_[m];
    values.resize(n);
    std::vector<std::string> texts(n);
    std::vector<std::uint8_t> flags(n, 0);
    bool any_text = false;
    for (const std::size_t r : rows) {
      Value v = value_at(r);
      values[r] = v.num;
      if (v.has_text) {
        texts[r] = std::move(v.text);
        flags[r] = 1;
        any_text = true;
      }
    }
    if (any_text) {
      cube_->texts_[m] = std::move(texts);
      cube_->text_flags_[m] = std::move(flags);
    }
    cube_->totals_[m] = total.num;
    cube_->total_values_[m] = std::move(total);
  }

  // A window's argument per row (key order).
  template <typename Eval>
  static std::vector<Value> arg_column(const Window& w, Eval& eval_at, const std::vector<std::size_t>& order) {
    std::vector<Value> a(order.empty() ? 0 : *std::max_element(order.begin(), order.end()) + 1);
    for (const std::size_t r : order) a[r] = eval_at(w.arg, r);
    return a;
  }

  // Above/Below/Top/Bottom at display position `pos`: the c-th value of its range.
  static Value shifted(const Window& w, const std::vector<Value>& a, const std::vector<std::size_t>& order, std::size_t pos,
                       std::int64_t c, const std::vector<std::size_t>& seg_first, const std::vector<std::size_t>& seg_last) {
    const auto first = static_cast<std::int64_t>(w.total ? 0 : seg_first[pos]);
    const auto last = static_cast<std::int64_t>(w.total ? order.size() : seg_last[pos]);
    const auto p = static_cast<std::int64_t>(pos);
    std::int64_t at = 0;
    switch (w.kind) {
      case InterRecordKind::kAbove: at = p - w.offset - c; break;
      case InterRecordKind::kBelow: at = p + w.offset + c; break;
      case InterRecordKind::kTop: at = first + std::max<std::int64_t>(w.offset, 1) - 1 + c; break;
      default: at = last - std::max<std::int64_t>(w.offset, 1) - c; break;
    }
    if (at < first || at >= last) return Value::null();
    return a[order[static_cast<std::size_t>(at)]];
  }

  // Whether two rows (key order) share every dimension value but the last.
  bool same_segment(std::size_t a, std::size_t b) const {
    for (std::size_t d = 0; d + 1 < dims_.size(); ++d)
      if (cube_->codes_[d][a] != cube_->codes_[d][b]) return false;
    return true;
  }

  bool has_none(std::uint64_t key) const {
    for (const auto& d : dims_) {
      const std::uint64_t radix = std::uint64_t{data_.fields()[d.field].symbols.size()} + 1;
      if ((key / d.stride) % radix == 0) return true;
    }
    return false;
  }

  // The rows' tuple keys, sorted: the cross product of each part's combinations.
  std::vector<std::uint64_t> row_keys(const std::map<std::uint32_t, std::vector<std::uint64_t>>& by_node) const {
    std::vector<std::uint64_t> out{0};
    for (std::size_t p = 0; p < parts_.size(); ++p) {
      std::vector<std::uint64_t> keys = part_keys(p, by_node);
      const std::uint64_t base = parts_[p].base;
      if (out.size() == 1 && out[0] == 0 && base == 1) {
        out.swap(keys);
        continue;
      }
      // The earlier parts' keys stay below this part's base: the sums come out sorted.
      std::vector<std::uint64_t> next;
      next.reserve(out.size() * keys.size());
      for (const std::uint64_t b : keys)
        for (const std::uint64_t a : out) next.push_back(a + b * base);
      out.swap(next);
    }
    return out;
  }

  // One part's combinations as keys of that part, sorted and distinct: the tuples of the
  // inner join of the possible rows of the part of the forest that links its dimensions, and
  // those the records of its aggregations reach. The inner walk is skipped when an
  // aggregation's table lies on that tree: its rows reach every such tuple anyway (a key
  // field's records are its values, which miss the tuples of rows where it is NULL).
  std::vector<std::uint64_t> part_keys(std::size_t p,
                                       const std::map<std::uint32_t, std::vector<std::uint64_t>>& by_node) const {
    const Part& part = parts_[p];
    std::uint32_t root = detail::kNoNode;
    for (std::size_t d = 0; d < dims_.size() && root == detail::kNoNode; ++d)
      if (part.reached[dims_[d].node]) root = dims_[d].node;
    RootedTree tree(graph_, root, dim_nodes_);
    // A part holding a table is walked from a table, so the join's records are its rows.
    if (graph_.is_field(root) && !tree.children[root].empty())
      tree = RootedTree(graph_, tree.children[root][0], dim_nodes_);
    std::vector<std::uint64_t> keys;
    bool reached_by_measure = false;
    for (const auto& [node, node_keys] : by_node) {
      if (!part.reached[node]) continue;
      keys.insert(keys.end(), node_keys.begin(), node_keys.end());
      reached_by_measure = reached_by_measure || (!graph_.is_field(node) && tree.contains(node));
    }
    if (!reached_by_measure) {
      JoinWalker walker(model_, *rows_, graph_, tree, part.dims, true);
      const std::vector<std::uint64_t> inner = detail::aggregate_node(model_, *rows_, walker, {}, part.space).keys;
      keys.insert(keys.end(), inner.begin(), inner.end());
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }

  // Orders rows as the spec says, then by each dimension in turn.
  void sort_rows(std::vector<std::size_t>& order) const {
    const HypercubeSpec& spec = cube_->spec_;
    struct SortColumn {
      std::vector<double> key;  // per row; NaN for None/NULL, which sorts last either way
      bool desc = false;
    };
    std::vector<SortColumn> columns;
    std::vector<std::uint8_t> dim_sorted(dims_.size(), 0);
    auto dim_column = [&](std::size_t d, const std::string& direction) {
      SortColumn c;
      c.desc = direction == "desc";
      const std::vector<std::uint32_t>& codes = cube_->codes_[d];
      if (direction == "load") {
        for (const std::uint32_t code : codes) c.key.push_back(code == kNull ? std::nan("") : code);
      } else {
        c.key = value_ranks(dims_[d].field, codes);
      }
      dim_sorted[d] = 1;
      return c;
    };
    for (const auto& [name, direction_given] : spec.sort) {
      const std::string direction = lower(direction_given);
      if (direction != "asc" && direction != "desc" && direction != "load")
        throw Error("sort direction '" + direction_given + "' for '" + name + "': use asc, desc or load");
      bool found = false;
      for (std::size_t d = 0; d < dims_.size() && !found; ++d) {
        if (spec.dimensions[d] != name) continue;
        columns.push_back(dim_column(d, direction));
        found = true;
      }
      for (std::size_t m = 0; m < spec.measures.size() && !found; ++m) {
        if (spec.measures[m] != name) continue;
        if (!measures_[m].windows.empty())
          throw Error("cannot sort by '" + name + "': it uses inter-record functions, which are computed on the sorted rows");
        if (direction == "load") throw Error("sort direction 'load' is for dimensions, not the measure '" + name + "'");
        SortColumn c;
        c.desc = direction == "desc";
        c.key = cube_->values_[m];
        columns.push_back(std::move(c));
        found = true;
      }
      if (!found) throw Error("cannot sort by '" + name + "': no dimension or measure of that name");
    }
    for (std::size_t d = 0; d < dims_.size(); ++d)
      if (!dim_sorted[d]) columns.push_back(dim_column(d, "asc"));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      for (const SortColumn& c : columns) {
        const double x = c.key[a], y = c.key[b];
        const bool xn = std::isnan(x), yn = std::isnan(y);
        if (xn || yn) {
          if (xn != yn) return yn;
          continue;
        }
        if (x != y) return c.desc ? x > y : x < y;
      }
      return false;
    });
  }

  // Each row's rank of its value among the values shown: numbers ascending, then texts in
  // code-point order; NaN for None.
  std::vector<double> value_ranks(std::uint32_t field, const std::vector<std::uint32_t>& codes) const {
    const SymbolTable& symbols = data_.fields()[field].symbols;
    std::vector<std::uint32_t> present(codes);
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
    if (!present.empty() && present.back() == kNull) present.pop_back();
    std::vector<std::uint32_t> by_value(present);
    std::sort(by_value.begin(), by_value.end(), [&](std::uint32_t a, std::uint32_t b) {
      const bool an = symbols.has_number(a), bn = symbols.has_number(b);
      if (an != bn) return an;
      if (an) {
        const double x = symbols.number(a), y = symbols.number(b);
        if (x != y) return x < y;
        return a < b;
      }
      const std::string_view x = symbols.text(a), y = symbols.text(b);
      return x != y ? x < y : a < b;
    });
    std::vector<double> rank_of_present(present.size());
    for (std::size_t i = 0; i < by_value.size(); ++i) {
      const auto at = std::lower_bound(present.begin(), present.end(), by_value[i]) - present.begin();
      rank_of_present[static_cast<std::size_t>(at)] = static_cast<double>(i);
    }
    std::vector<double> out;
    out.reserve(codes.size());
    for (const std::uint32_t code : codes) {
      if (code == kNull) {
        out.push_back(std::nan(""));
      } else {
        const auto at = std::lower_bound(present.begin(), present.end(), code) - present.begin();
        out.push_back(rank_of_present[static_cast<std::size_t>(at)]);
      }
    }
    return out;
  }

  void apply_order(const std::vector<std::size_t>& order) {
    auto permute = [&](auto& v) {
      std::remove_reference_t<decltype(v)> out;
      out.reserve(order.size());
      for (const std::size_t r : order) out.push_back(v[r]);
      v.swap(out);
    };
    for (auto& c : cube_->codes_) permute(c);
    for (auto& v : cube_->values_) permute(v);
    for (auto& s : cube_->only_symbols_)
      if (!s.empty()) permute(s);
    for (auto& t : cube_->texts_)
      if (!t.empty()) permute(t);
    for (auto& f : cube_->text_flags_)
      if (!f.empty()) permute(f);
    cube_->rows_ = order.size();
  }

  const AssociativeModel& model_;
  const DataModel& data_;
  const SelectionState& state_;
  LinkGraph graph_;
  std::shared_ptr<Hypercube> cube_;
  std::shared_ptr<const RowStates> rows_;
  std::vector<DimPlace> dims_;
  std::vector<std::uint32_t> dim_nodes_;
  // A part of the forest that holds dimensions: its nodes, its key space, its base in a row's
  // key, and every dimension placed with its stride within the part (0 for other parts').
  struct Part {
    std::vector<std::uint8_t> reached;
    std::uint64_t space = 1;
    std::uint64_t base = 1;
    std::vector<DimPlace> dims;
  };
  static constexpr std::size_t kNoPart = ~std::size_t{0};
  std::vector<Part> parts_;
  const std::vector<DimPlace> no_dims_;
  std::uint64_t key_space_ = 1;
  // Per node and record set, the aggregations it computes, and the other aggregations.
  std::map<Slot, std::vector<Term>> terms_;
  std::map<Slot, std::vector<GenericTerm>> generic_;
  // Set analysis: the states sets name, the record sets the aggregations read (0: the object's
  // state, rows_), each distinct set once, and per expression node the set of its scope.
  const NamedStates* states_ = nullptr;
  NamedStates own_states_;
  std::string state_name_;
  std::vector<std::shared_ptr<const SetNode>> sets_{nullptr};
  std::map<std::string, std::uint32_t> set_index_;
  std::vector<std::shared_ptr<const RowStates>> set_rows_;
  std::vector<std::shared_ptr<const SetNode>> scope_;
  std::string set_text_;  // the text of the measure that wrote each set, for errors
  std::vector<std::string> set_texts_{""};
  std::vector<MeasurePlan> measures_;
  std::vector<std::pair<Expression, std::uint32_t>> nested_exprs_;
  std::vector<AggrTerm> aggr_terms_;
  std::vector<std::vector<Value>> aggr_columns_;  // per Aggr term, per row (in key order)
  std::vector<Value> aggr_totals_;
};

// The cube, computed. Calculated dimensions run on a model with their derived columns; the
// cube keeps that model and shows the dimensions as given.
std::shared_ptr<const Hypercube> compute_hypercube(const AssociativeModel& model, const SelectionState& state,
                                                   const HypercubeSpec& spec, std::shared_ptr<const RowStates> rows,
                                                   const NamedStates* states, const std::string& state_name) {
  if (std::none_of(spec.dimensions.begin(), spec.dimensions.end(), is_calculated_dimension))
    return HypercubeBuilder(model, state, spec, std::move(rows), states, state_name).run();
  if (!rows) rows = model.rows(state);
  CalculatedModel derived = with_calculated_dimensions(model, state, rows, states, state_name, spec.dimensions);
  HypercubeSpec inner = spec;
  inner.dimensions = derived.fields;
  for (auto& [column, direction] : inner.sort)
    for (std::size_t d = 0; d < spec.dimensions.size(); ++d)
      if (column == spec.dimensions[d]) column = derived.fields[d];
  auto cube = std::make_shared<Hypercube>(
      *HypercubeBuilder(*derived.model, state, inner, std::move(rows), states, state_name).run());
  cube->spec_ = spec;
  cube->derived_model_ = std::move(derived.model);
  cube->sources_ = std::move(derived.sources);
  cube->source_maps_ = std::move(derived.source_maps);
  return cube;
}

std::shared_ptr<const Hypercube> hypercube(const AssociativeModel& model, const SelectionState& state,
                                           const HypercubeSpec& spec, std::shared_ptr<const RowStates> rows) {
  CacheKey key{&model, kHypercubeCacheKind, 0, state.encode()};
  key.state.push_back(0xFFFFFFFFU);
  const std::vector<std::uint32_t> encoded = spec.encode();
  key.state.insert(key.state.end(), encoded.begin(), encoded.end());
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return std::static_pointer_cast<const Hypercube>(hit);
  std::shared_ptr<const Hypercube> computed = compute_hypercube(model, state, spec, std::move(rows), nullptr, "$");
  const std::size_t bytes = computed->byte_size();
  cache.insert(std::move(key), model.weak_from_this(), computed, bytes);
  return computed;
}

std::shared_ptr<const Hypercube> hypercube(const AssociativeModel& model, const SelectionState& state,
                                           const HypercubeSpec& spec, std::shared_ptr<const RowStates> rows,
                                           const NamedStates* states, const std::string& state_name) {
  if (!states) return hypercube(model, state, spec, std::move(rows));
  // The result depends on every state a set may name: all of them are in the key.
  CacheKey key{&model, kHypercubeCacheKind, 1, state.encode()};
  key.state.push_back(0xFFFFFFFFU);
  encode_string(state_name, key.state);
  for (const auto& [name, st] : *states) {
    encode_string(name, key.state);
    const std::vector<std::uint32_t> e = st.encode();
    key.state.push_back(static_cast<std::uint32_t>(e.size()));
    key.state.insert(key.state.end(), e.begin(), e.end());
  }
  key.state.push_back(0xFFFFFFFFU);
  const std::vector<std::uint32_t> encoded = spec.encode();
  key.state.insert(key.state.end(), encoded.begin(), encoded.end());
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return std::static_pointer_cast<const Hypercube>(hit);
  std::shared_ptr<const Hypercube> computed = compute_hypercube(model, state, spec, std::move(rows), states, state_name);
  const std::size_t bytes = computed->byte_size();
  cache.insert(std::move(key), model.weak_from_this(), computed, bytes);
  return computed;
}

}  // namespace assoc
