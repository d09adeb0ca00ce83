// Each input of a measure as a column over the chart rows: from the accumulators of its
// node, or from the generic terms evaluated per record.
#include <algorithm>

#include "hypercube_builder.hpp"

namespace assoc {
std::vector<std::uint32_t> HypercubeBuilder::groups_of_rows(const NodeAggregates& agg, const std::vector<std::uint64_t>& keys,
                                                            std::size_t p) const {
  std::vector<std::uint32_t> out(keys.size(), detail::KeyIndex::kAbsent);
  if (p != kNoPart && parts_.size() <= 1 && std::is_sorted(keys.begin(), keys.end())) {
    // The rows' keys are the groups' keys (one part): both lists walked side by side.
    std::size_t g = 0;
    for (std::size_t r = 0; r < keys.size(); ++r) {
      while (g < agg.keys.size() && agg.keys[g] < keys[r]) ++g;
      if (g < agg.keys.size() && agg.keys[g] == keys[r]) out[r] = static_cast<std::uint32_t>(g);
    }
    return out;
  }
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const std::uint64_t k = part_key(keys[r], p);
    const auto at = std::lower_bound(agg.keys.begin(), agg.keys.end(), k);
    if (at != agg.keys.end() && *at == k) out[r] = static_cast<std::uint32_t>(at - agg.keys.begin());
  }
  return out;
}

std::uint64_t HypercubeBuilder::project(std::uint64_t key, std::size_t p, const std::vector<std::uint8_t>& keep) const {
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

std::uint64_t HypercubeBuilder::part_key(std::uint64_t row_key, std::size_t p) const {
  if (p == kNoPart) return 0;
  if (parts_.size() <= 1) return row_key;
  return row_key / parts_[p].base % parts_[p].space;
}

GenericResults HypercubeBuilder::run_generic(Slot slot, const std::vector<GenericTerm>& terms) {
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
    // With TOTAL <…> lookups a record's value depends on its row: per record, its value
    // for the totals row (values then hold one per record and row).
    std::vector<Value> all_values, all_weights;
  };
  std::vector<Gathered> g(terms.size());
  for (std::size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].fields.size() != 1 || !terms[t].lookups.empty()) continue;
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
        if (!term.lookups.empty()) {
          inputs.clear();
          for (std::size_t j = 0; j < term.fields.size(); ++j)
            inputs.push_back(symbol_value(data_.fields()[term.fields[j]].symbols, b.extra[sources[t][j]][i]));
          const std::size_t nf = inputs.size();
          for (const detail::RowLookup& l : term.lookups) inputs.push_back(l.all);
          gt.all_values.push_back(term.value.eval(inputs.data()));
          if (term.has_weight) gt.all_weights.push_back(term.weight.eval(inputs.data()));
          for (const std::uint64_t k : record_keys) {
            for (std::size_t j = 0; j < term.lookups.size(); ++j) {
              const detail::RowLookup& l = term.lookups[j];
              const auto it = l.values.find(project(k, p, l.keep));
              inputs[nf + j] = it == l.values.end() ? l.empty : it->second;
            }
            gt.values.push_back(term.value.eval(inputs.data()));
            if (term.has_weight) gt.weights.push_back(term.weight.eval(inputs.data()));
            gt.members[k].push_back(static_cast<std::uint32_t>(gt.values.size() - 1));
          }
          continue;
        }
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
    const std::vector<Value>& all = term.lookups.empty() ? gt.values : gt.all_values;
    const std::vector<Value>& all_weights = term.lookups.empty() ? gt.weights : gt.all_weights;
    out.totals.push_back(all.empty() ? empty_aggregate(term.fn->kind)
                                     : aggregate_values(term.fn->kind, term.distinct, all, all_weights, term.params));
  }
  return out;
}

void HypercubeBuilder::fast_measure(std::size_t m, const MeasureInput& input,
                                    const std::map<Slot, NodeAggregates>& by_node, const std::vector<std::uint64_t>& keys) {
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
  const std::vector<std::uint32_t> group = groups_of_rows(agg, keys, part_of_node(input.node));
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const std::uint32_t g = group[r];
    if (g == detail::KeyIndex::kAbsent) {
      values[r] = detail::empty_value(term.func);
    } else {
      values[r] = agg.values[input.term][g];
      if (only) cube_->only_symbols_[m][r] = agg.symbols[input.term][g];
    }
  }
  cube_->totals_[m] = agg.totals[input.term];
  cube_->total_values_[m] = only ? symbol_value(data_.fields()[term.field].symbols, agg.total_symbols[input.term])
                                 : Value::number(agg.totals[input.term]);
}

Value HypercubeBuilder::input_column(const MeasureInput& input, const std::map<Slot, NodeAggregates>& by_node,
                                     const std::map<Slot, GenericResults>& generic,
                                     const std::vector<std::uint64_t>& keys, std::vector<Value>& out) const {
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
  const Value total = only ? symbol_value(symbols, agg.total_symbols[input.term]) : Value::number(agg.totals[input.term]);
  if (input.whole) {
    out.assign(keys.size(), total);
    return total;
  }
  const std::vector<std::uint32_t> group = groups_of_rows(agg, keys, p);
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const std::uint32_t g = group[r];
    if (g == detail::KeyIndex::kAbsent) {
      out[r] = Value::number(detail::empty_value(term.func));
    } else if (only) {
      out[r] = symbol_value(symbols, agg.symbols[input.term][g]);
    } else {
      out[r] = Value::number(agg.values[input.term][g]);
    }
  }
  return total;
}

}  // namespace assoc
