// Aggregations over Aggr results: planned as a nested cube over the Aggr dimensions, whose
// rows are joined back to the chart rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>

#include "assoc/error.hpp"
#include "hypercube_builder.hpp"

namespace assoc {

std::int32_t HypercubeBuilder::plan_aggr_term(const std::string& text, const Expression& e, std::uint32_t agg,
                                              std::uint32_t first_aggr, std::uint32_t outer_set) {
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
  // The Aggr's own set, inheriting the outer scope's; the outer aggregation's set (§2.9).
  const std::uint32_t aggr_node = is_aggr_call(a) ? agg : first_aggr;
  std::shared_ptr<const SetNode> own;
  if (aggr->set >= 0) {
    const ExprNode& sn = e.nodes[static_cast<std::size_t>(aggr->set)];
    own = parse_set_expression(text, sn.name, sn.position + 1);
  }
  t.aggr_set = intern_set(inherit_set(scope_[aggr_node], own));
  t.outer_set = outer_set;
  t.scope = scope_[aggr->args[0]];
  auto set_text = [&](const ExprNode& y) { return y.set < 0 ? std::string() : e.nodes[static_cast<std::size_t>(y.set)].name; };
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
      if (set_text(y) != set_text(*aggr) || scope_[y.args[0]] != t.scope)
        fail(text, y.position, "the Aggr calls of one aggregation must have the same set expression");
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
    if (lookups_.contains(n))
      fail(text, y.position, "TOTAL <…> naming a chart dimension beside Aggr in " + a.name + " is not supported");
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
  plan_dense_aggr(e, a, *aggr, t);
  aggr_terms_.push_back(std::move(t));
  return static_cast<std::int32_t>(aggr_terms_.size() - 1);
}

std::int64_t HypercubeBuilder::find_aggr(const Expression& e, std::uint32_t agg) {
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

std::string HypercubeBuilder::aggr_sort(const std::string& text, const ExprNode& d) const {
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

namespace {

// An aggregation whose result does not depend on the order of its values.
bool order_free_aggregation(AggKind kind) {
  switch (kind) {
    case AggKind::kConcat:
    case AggKind::kFirstSortedValue:
    case AggKind::kMode:
      return false;
    default:
      return true;
  }
}

}  // namespace

void HypercubeBuilder::plan_dense_aggr(const Expression& e, const ExprNode& outer, const ExprNode& aggr,
                                       AggrTerm& t) const {
  if (t.dims.size() != 1 || !t.sorts[0].empty() || t.aggr_nodes.size() != 1 || t.has_weight || t.distinct) return;
  if (t.aggr_set != 0 || t.outer_set != 0 || t.scope || aggr.set >= 0) return;
  switch (t.kind) {
    case AggKind::kSum:
    case AggKind::kCount:
    case AggKind::kAvg:
    case AggKind::kMin:
    case AggKind::kMax:
    case AggKind::kOnly: break;
    default: return;
  }
  // The outer aggregation reads the Aggr value itself, with no other argument.
  if (!is_aggr_call(outer) && (outer.args.size() != 1 || outer.args[0] != t.aggr_nodes[0])) return;
  const ExprNode& inner = e.nodes[aggr.args[0]];
  if (inner.kind != ExprNode::Kind::kAgg || inner.set >= 0 || inner.total || inner.distinct || inner.nodistinct ||
      inner.args.size() != 1)
    return;
  const ExprNode& arg = e.nodes[inner.args[0]];
  if (arg.kind != ExprNode::Kind::kField) return;
  AggFunc func = AggFunc::kSum;
  switch (find_aggregate_function(inner.name)->kind) {
    case AggKind::kSum: func = AggFunc::kSum; break;
    case AggKind::kCount: func = AggFunc::kCount; break;
    case AggKind::kAvg: func = AggFunc::kAvg; break;
    case AggKind::kMin: func = AggFunc::kMin; break;
    case AggKind::kMax: func = AggFunc::kMax; break;
    default: return;
  }
  const int f = data_.find_field(arg.name);
  if (f < 0) return;
  const std::uint32_t node = graph_.node_of_field(static_cast<std::uint32_t>(f));
  if (graph_.is_field(node)) return;  // a key field's records are its values
  const Table& table = data_.tables()[node];
  const std::uint32_t dim = t.dim_fields[0];
  if (table.column_of(dim) < 0) return;
  // The dimension is the table's own field, or a key field linking that table.
  const std::uint32_t dim_node = graph_.node_of_field(dim);
  if (dim_node != node) {
    const auto& holders = model_.linked_holders(dim);
    if (!graph_.is_field(dim_node) ||
        std::none_of(holders.begin(), holders.end(), [&](const auto& h) { return h.table == node; }))
      return;
  }
  t.dense = true;
  t.dense_term = Term{func, static_cast<std::uint32_t>(f), static_cast<std::uint32_t>(table.column_of(static_cast<std::uint32_t>(f)))};
  t.dense_table = node;
}

namespace {

// An aggregation over Aggr values (numbers, NaN for NULL) folded one value at a time, as
// aggregate_values folds them in the same order: Sum, Count, Avg, Min, Max, Only.
struct Fold {
  double sum = 0, count = 0, min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  double only = 0;
  std::uint8_t members = 0, only_state = 0;  // only_state: 0 none, 1 one value, 2 several

  void add(double v) {
    members = 1;
    const bool number = std::isfinite(v);
    sum += number ? v : 0.0;
    count += number ? 1 : 0;
    if (!number) return;
    min = std::min(min, v);
    max = std::max(max, v);
    if (only_state == 0) {
      only = v;
      only_state = 1;
    } else if (only_state == 1 && only != v) {
      only_state = 2;
    }
  }
  Value result(AggKind kind) const {
    if (!members) return empty_aggregate(kind);
    switch (kind) {
      case AggKind::kSum: return Value::number(sum);
      case AggKind::kCount: return Value::number(count);
      case AggKind::kAvg: return count > 0 ? Value::number(sum / count) : Value::null();
      case AggKind::kMin: return count > 0 ? Value::number(min) : Value::null();
      case AggKind::kMax: return count > 0 ? Value::number(max) : Value::null();
      case AggKind::kOnly: return only_state == 1 ? Value::number(only) : Value::null();
      default: return Value::null();
    }
  }
};

}  // namespace

bool HypercubeBuilder::compute_aggr_dense(const AggrTerm& t, const std::vector<std::uint64_t>& keys) {
  const std::uint32_t field = t.dim_fields[0];
  const std::uint32_t n = data_.fields()[field].symbols.size();
  const Table& table = data_.tables()[t.dense_table];
  if (std::uint64_t{n} > std::max<std::uint64_t>(std::uint64_t{1} << 20, 4 * std::uint64_t{table.rows})) return false;
  const std::uint32_t field_node = graph_.node_of_field(field);
  // The chart's dimensions: the Aggr's own (the virtual row's value), and the others, which
  // the data links to the virtual rows; those must lie in the Aggr dimension's part.
  std::uint64_t own_stride = 0;
  std::vector<DimPlace> lacking;
  std::vector<std::uint32_t> lacking_nodes;
  for (const DimPlace& d : dims_) {
    if (d.field == field) {
      own_stride += d.stride;
    } else {
      lacking.push_back(d);
      lacking_nodes.push_back(d.node);
    }
  }
  if (!lacking.empty() && (parts_.size() != 1 || !parts_[0].reached[field_node])) return false;

  const RowStates& rows = *rows_;
  const detail::DenseGroups groups =
      detail::aggregate_by_column(model_, rows, t.dense_table, static_cast<std::uint32_t>(table.column_of(field)), t.dense_term);
  // The virtual rows: the dimension's possible values, from the possible records of every
  // table it links (NULL is none).
  std::vector<std::uint8_t> is_row = groups.hits;
  if (graph_.is_field(field_node)) {
    std::vector<std::uint32_t> codes(1024);
    for (const auto& h : model_.linked_holders(field)) {
      if (h.table == t.dense_table) continue;
      const Table& other = data_.tables()[h.table];
      const Bitset* possible = rows.rows[h.table].get();
      for (std::size_t begin = 0; begin < other.rows; begin += codes.size()) {
        const std::size_t count = std::min(codes.size(), other.rows - begin);
        other.columns[h.column].index.decode(begin, count, codes.data());
        for (std::size_t i = 0; i < count; ++i)
          if (codes[i] < n && (possible == nullptr || possible->test(begin + i))) is_row[codes[i]] = 1;
      }
    }
  }

  // Each chart row by its key.
  constexpr std::uint32_t kNoRow = std::numeric_limits<std::uint32_t>::max();
  const bool direct = key_space_ <= 4 * (std::uint64_t{keys.size()} + n) + (std::uint64_t{1} << 20);
  std::vector<std::uint32_t> row_at(direct ? key_space_ : 0, kNoRow);
  KeyIndex row_index(direct ? 0 : keys.size());
  for (std::size_t r = 0; r < keys.size(); ++r) {
    if (direct) {
      row_at[keys[r]] = static_cast<std::uint32_t>(r);
    } else {
      row_index.emplace(keys[r], static_cast<std::uint32_t>(r));
    }
  }
  auto row_of = [&](std::uint64_t key) -> std::uint32_t {
    if (direct) return row_at[key];
    const std::uint32_t r = row_index.find(key);
    return r == KeyIndex::kAbsent ? kNoRow : r;
  };
  // DISTINCT: a virtual row linked to several chart rows counts in the first, by the values
  // of the chart dimensions the Aggr lacks (ascending, NULL last) in the chart's order.
  std::vector<std::vector<double>> rank;  // per lacking dimension, per symbol
  auto before = [&](std::uint64_t a, std::uint64_t b) {
    if (rank.empty()) {
      for (const DimPlace& d : lacking) {
        std::vector<std::uint32_t> all(data_.fields()[d.field].symbols.size());
        std::iota(all.begin(), all.end(), 0U);
        rank.push_back(value_ranks(d.field, all));
      }
    }
    for (std::size_t j = 0; j < lacking.size(); ++j) {
      const std::uint64_t radix = std::uint64_t{data_.fields()[lacking[j].field].symbols.size()} + 1;
      const std::uint64_t ca = a / lacking[j].stride % radix, cb = b / lacking[j].stride % radix;
      if (ca == cb) continue;
      if (ca == 0 || cb == 0) return cb == 0;
      return rank[j][ca - 1] < rank[j][cb - 1];
    }
    return a < b;
  };

  // Per virtual row (in the order of its symbols), the chart rows it counts in.
  std::vector<std::uint32_t> offsets(std::size_t{n} + 1, 0);
  std::vector<std::uint32_t> linked;
  if (lacking.empty()) {
    for (std::uint32_t c = 0; c < n; ++c) {
      if (is_row[c]) {
        const std::uint32_t r = row_of(std::uint64_t{c + 1} * own_stride);
        if (r != kNoRow) linked.push_back(r);
      }
      offsets[c + 1] = static_cast<std::uint32_t>(linked.size());
    }
  } else if (graph_.is_field(field_node)) {
    // The Aggr dimension is a key field: each value's tuples are the link sets of the tables it joins.
    const RootedTree tree(graph_, field_node, lacking_nodes);
    JoinWalker walker(model_, rows, graph_, tree, lacking, true);
    const std::vector<JoinWalker::Link> links = walker.root_links();
    std::vector<std::uint64_t> tuples, next;
    for (std::uint32_t c = 0; c < n; ++c) {
      offsets[c + 1] = offsets[c];
      if (!is_row[c]) continue;
      tuples.assign(1, std::uint64_t{c + 1} * own_stride);
      for (const JoinWalker::Link& l : links) {
        const std::span<const std::uint64_t> set = l.sets->of(c + 1);
        next.clear();
        for (const std::uint64_t k : tuples)
          for (const std::uint64_t x : set) next.push_back(k + x);
        tuples.swap(next);
      }
      if (!t.nodistinct && tuples.size() > 1)
        tuples.assign(1, *std::min_element(tuples.begin(), tuples.end(), before));
      for (const std::uint64_t k : tuples) {
        const std::uint32_t r = row_of(k);
        if (r != kNoRow) linked.push_back(r);
      }
      offsets[c + 1] = static_cast<std::uint32_t>(linked.size());
    }
  } else {
    // The Aggr dimension is the table's own field: its records link each value.
    const RootedTree tree(graph_, field_node, lacking_nodes);
    JoinWalker walker(model_, rows, graph_, tree, lacking, true);
    const auto column = static_cast<std::uint32_t>(table.column_of(field));
    std::vector<std::uint64_t> best(t.nodistinct ? 0 : n, detail::kMissing);
    KeyIndex seen;
    std::vector<std::uint64_t> pairs;  // NODISTINCT: symbol << 32 | chart row, each once
    walker.for_each_record({column}, [&](const detail::RecordBatch& b) {
      for (std::size_t i = 0; i < b.n; ++i) {
        const std::uint32_t c = b.extra[0][i];
        if (c >= n) continue;
        for (std::uint32_t k = b.key_offsets[i]; k < b.key_offsets[i + 1]; ++k) {
          const std::uint64_t key = b.keys[k] + std::uint64_t{c + 1} * own_stride;
          if (!t.nodistinct) {
            if (best[c] == detail::kMissing || before(key, best[c])) best[c] = key;
            continue;
          }
          const std::uint32_t r = row_of(key);
          const std::uint64_t pair = std::uint64_t{c} << 32 | r;
          if (r != kNoRow && seen.emplace(pair, 0).second) pairs.push_back(pair);
        }
      }
    });
    if (!t.nodistinct) {
      for (std::uint32_t c = 0; c < n; ++c) {
        offsets[c + 1] = offsets[c];
        if (!is_row[c] || best[c] == detail::kMissing) continue;
        const std::uint32_t r = row_of(best[c]);
        if (r != kNoRow) linked.push_back(r);
        offsets[c + 1] = static_cast<std::uint32_t>(linked.size());
      }
    } else {
      std::sort(pairs.begin(), pairs.end());
      std::size_t at = 0;
      for (std::uint32_t c = 0; c < n; ++c) {
        for (; at < pairs.size() && (pairs[at] >> 32) == c; ++at)
          if (is_row[c]) linked.push_back(static_cast<std::uint32_t>(pairs[at]));
        offsets[c + 1] = static_cast<std::uint32_t>(linked.size());
      }
    }
  }

  // Each chart row's aggregation of its virtual rows' values, and the total over them all.
  std::vector<Fold> folds(keys.size());
  Fold total;
  for (std::uint32_t c = 0; c < n; ++c) {
    if (!is_row[c]) continue;
    const double v = groups.values[c];
    total.add(v);
    for (std::uint32_t i = offsets[c]; i < offsets[c + 1]; ++i) folds[linked[i]].add(v);
  }
  std::vector<Value> column(keys.size());
  for (std::size_t r = 0; r < keys.size(); ++r) column[r] = folds[r].result(t.kind);
  aggr_columns_.push_back(std::move(column));
  aggr_totals_.push_back(total.result(t.kind));
  return true;
}

void HypercubeBuilder::compute_aggr(const AggrTerm& t, const std::vector<std::uint64_t>& keys) {
  if (t.dense && compute_aggr_dense(t, keys)) return;
  HypercubeSpec spec;
  spec.dimensions = t.dims;
  Nested nested;
  const Expression& outer = aggr_expression(t);
  for (std::size_t i = 0; i < t.aggr_nodes.size(); ++i) {
    std::string name = std::to_string(i + 1);
    name.insert(name.begin(), '#');
    spec.measures.push_back(std::move(name));
    nested.exprs.emplace_back(outer, outer.nodes[t.aggr_nodes[i]].args[0]);
    nested.scopes.push_back(t.scope);
  }
  if (t.aggr_set != 0) nested.tuples = set_rows_[t.aggr_set];
  if (t.outer_set != 0 && t.outer_set != t.aggr_set) nested.within = set_rows_[t.outer_set];
  for (std::size_t d = 0; d < t.dims.size(); ++d)
    if (!t.sorts[d].empty()) spec.sort.emplace_back(t.dims[d], t.sorts[d]);
  spec.suppress_missing = true;  // NULL is not a value of an Aggr dimension
  // The virtual rows' order reaches the result only through an order-bound aggregation
  // (Concat, FirstSortedValue, Mode's ties) or a sort the Aggr names: else it is not made.
  const bool order_free = spec.sort.empty() && order_free_aggregation(t.kind);
  spec.unordered = order_free;
  const std::shared_ptr<Hypercube> v = HypercubeBuilder(model_, state_, spec, rows_, states_, state_name_, std::move(nested)).run();
  const std::size_t n = v->size();
  // Per virtual row, the outer plans' value and weight.
  std::vector<Value> values(n), weights(t.has_weight ? n : 0);
  std::vector<Value> in(t.aggr_nodes.size() + t.field_dims.size());
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < t.aggr_nodes.size(); ++i) in[i] = cube_value(data_, *v, i, r);
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
    link.unordered = order_free;
    // Through the records of the outer aggregation's set.
    const std::shared_ptr<Hypercube> l =
        HypercubeBuilder(model_, state_, link, set_rows_[t.outer_set], states_, state_name_).run();
    std::vector<std::uint64_t> radix;
    for (const std::uint32_t f : t.dim_fields) radix.push_back(std::uint64_t{data_.fields()[f].symbols.size()} + 1);
    auto aggr_key = [&](const Hypercube& c, std::size_t r) {
      std::uint64_t k = 0;
      for (std::size_t j = 0; j < t.dim_fields.size(); ++j) k = k * radix[j] + enc(c.codes(j)[r]);
      return k;
    };
    // Each Aggr key's virtual row: a table indexed by the key when the key space is not much
    // larger than the rows, else a hash map.
    constexpr std::uint32_t kNoRow = std::numeric_limits<std::uint32_t>::max();
    std::uint64_t key_space = 1;
    for (const std::uint64_t r : radix) key_space = key_space > (std::uint64_t{1} << 40) / r ? std::uint64_t{1} << 40 : key_space * r;
    const bool direct = key_space <= 4 * (std::uint64_t{n} + l->size()) + (std::uint64_t{1} << 20);
    std::vector<std::uint32_t> row_of_key(direct ? key_space : 0, kNoRow);
    KeyIndex row_of_hashed(direct ? 0 : n);
    if (direct) {
      for (std::size_t r = 0; r < n; ++r) row_of_key[aggr_key(*v, r)] = static_cast<std::uint32_t>(r);
    } else {
      for (std::size_t r = 0; r < n; ++r) row_of_hashed.emplace(aggr_key(*v, r), static_cast<std::uint32_t>(r));
    }
    auto virtual_row = [&](std::uint64_t key) {
      if (direct) return row_of_key[key];
      const std::uint32_t r = row_of_hashed.find(key);
      return r == KeyIndex::kAbsent ? kNoRow : r;
    };
    // DISTINCT: a virtual row counts in its first chart row only, first in the order of the
    // chart dimensions the Aggr lacks (ascending by value, NULL last), as a sorted link cube
    // lists them; unsorted, that row is found by comparing their value ranks.
    std::vector<std::vector<double>> rank;  // per chart dimension the Aggr lacks: per link row
    if (!t.nodistinct && link.unordered)
      for (std::size_t j = t.dims.size(); j < link.dimensions.size(); ++j)
        rank.push_back(value_ranks(l->dimension_field(j), l->codes(j)));
    auto before = [&](std::size_t a, std::size_t b) {  // link row a comes before link row b
      for (const std::vector<double>& k : rank) {
        const bool an = std::isnan(k[a]), bn = std::isnan(k[b]);
        if (an != bn) return bn;
        if (!an && k[a] != k[b]) return k[a] < k[b];
      }
      return a < b;
    };
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> first(t.nodistinct ? 0 : n, kNone);  // per virtual row: its link row
    auto add = [&](std::size_t r, std::uint32_t virtual_r) {
      std::uint64_t key = 0;
      for (std::size_t d = 0; d < dims_.size(); ++d) key += enc(l->codes(link_col[d])[r]) * dims_[d].stride;
      members[key].push_back(virtual_r);
    };
    for (std::size_t r = 0; r < l->size(); ++r) {
      const std::uint32_t v_r = virtual_row(aggr_key(*l, r));
      if (v_r == kNoRow) continue;
      if (t.nodistinct) {
        add(r, v_r);
      } else if (first[v_r] == kNone || before(r, first[v_r])) {
        first[v_r] = r;
      }
    }
    for (std::size_t v_r = 0; v_r < first.size(); ++v_r)
      if (first[v_r] != kNone) add(first[v_r], static_cast<std::uint32_t>(v_r));
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

const Expression& HypercubeBuilder::aggr_expression(const AggrTerm& t) const {
  for (const MeasurePlan& m : measures_)
    for (const MeasureInput& in : m.inputs)
      if (in.aggr >= 0 && &aggr_terms_[static_cast<std::size_t>(in.aggr)] == &t) return m.expr;
  return measures_.back().expr;
}

}  // namespace assoc
