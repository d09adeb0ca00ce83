#include "assoc/hypercube.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <numeric>
#include <ranges>

#include "assoc/calculated_dimension.hpp"
#include "assoc/error.hpp"
#include "assoc/result_cache.hpp"
#include "assoc/value_order.hpp"
#include "hypercube_builder.hpp"
#include "radix_sort.hpp"

namespace assoc {

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
  out.push_back((suppress_zero ? 1U : 0U) | (suppress_missing ? 2U : 0U) | (unordered ? 4U : 0U) | (pivot ? 8U : 0U));
  out.push_back(static_cast<std::uint32_t>(pivot_top.size()));
  out.insert(out.end(), pivot_top.begin(), pivot_top.end());
  return out;
}

Value cube_value(const DataModel& data, const Hypercube& cube, std::size_t m, std::size_t r) {
  if (cube.only_field(m) != kNull) return symbol_value(data.fields()[cube.only_field(m)].symbols, cube.only_symbols(m)[r]);
  if (const std::string* txt = cube.text(m, r)) return Value::dual(cube.values(m)[r], *txt);
  return Value::number(cube.values(m)[r]);
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

std::shared_ptr<Hypercube> HypercubeBuilder::run() {
  const HypercubeSpec& spec = cube_->spec_;
  if (spec.dimensions.empty() && spec.measures.empty())
    throw Error("a hypercube needs at least one dimension or measure");
  for (const std::uint32_t t : spec.pivot_top)
    if (t >= spec.dimensions.size() || std::count(spec.pivot_top.begin(), spec.pivot_top.end(), t) > 1)
      throw Error("pivot_top: " + std::to_string(t) + " is not one of the " + std::to_string(spec.dimensions.size()) +
                  " dimensions, or is listed twice");
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
  for (const auto& [slot, agg] : by_node)
    if (grouped_slots_.contains(slot)) reached[slot.first].insert(reached[slot.first].end(), agg.keys.begin(), agg.keys.end());
  for (const auto& [slot, res] : generic_by_node) {
    const bool grouped = std::any_of(generic_.at(slot).begin(), generic_.at(slot).end(),
                                     [](const GenericTerm& t) { return !t.total; });
    if (grouped) reached[slot.first].insert(reached[slot.first].end(), res.keys.begin(), res.keys.end());
  }
  std::vector<std::uint64_t> keys = row_keys(reached);
  // An Aggr's set makes its virtual rows; the outer aggregation's set keeps those it reaches.
  if (nested_.tuples) keys = tuple_keys(*nested_.tuples);
  if (nested_.within) {
    const std::vector<std::uint64_t> reach = tuple_keys(*nested_.within);
    std::erase_if(keys, [&](std::uint64_t k) { return !std::binary_search(reach.begin(), reach.end(), k); });
  }
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
        plan.inputs[static_cast<std::size_t>(single)].aggr < 0 && plan.inputs[static_cast<std::size_t>(single)].window < 0 &&
        !plan.inputs[static_cast<std::size_t>(single)].whole) {
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
  const bool windows = std::any_of(measures_.begin(), measures_.end(), [](const MeasurePlan& p) { return !p.windows.empty(); });
  if (!spec.unordered || windows) sort_rows(order);
  for (Deferred& d : deferred) window_measure(d.m, d.columns, d.totals, order);
  apply_order(order);
  return cube_;
}

void HypercubeBuilder::place_dimensions() {
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

std::size_t HypercubeBuilder::part_of_node(std::uint32_t node) const {
  for (std::size_t p = 0; p < parts_.size(); ++p)
    if (parts_[p].reached[node]) return p;
  return kNoPart;
}

bool HypercubeBuilder::has_none(std::uint64_t key) const {
  for (const auto& d : dims_) {
    const std::uint64_t radix = std::uint64_t{data_.fields()[d.field].symbols.size()} + 1;
    if ((key / d.stride) % radix == 0) return true;
  }
  return false;
}

std::vector<std::uint64_t> HypercubeBuilder::row_keys(
    const std::map<std::uint32_t, std::vector<std::uint64_t>>& by_node) const {
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

std::vector<std::uint64_t> HypercubeBuilder::part_keys(
    std::size_t p, const std::map<std::uint32_t, std::vector<std::uint64_t>>& by_node) const {
  const Part& part = parts_[p];
  std::uint32_t root = detail::kNoNode;
  for (std::size_t d = 0; d < dims_.size() && root == detail::kNoNode; ++d)
    if (part.reached[dims_[d].node]) root = dims_[d].node;
  RootedTree tree(graph_, root, dim_nodes_);
  // A part holding a table is walked from a table, so the join's records are its rows.
  if (graph_.is_field(root) && !tree.children[root].empty())
    tree = RootedTree(graph_, tree.children[root][0], dim_nodes_);
  std::vector<std::uint64_t> keys;
  std::vector<std::size_t> runs{0};  // where each list of keys starts
  bool reached_by_measure = false;
  for (const auto& [node, node_keys] : by_node) {
    if (!part.reached[node]) continue;
    keys.insert(keys.end(), node_keys.begin(), node_keys.end());
    runs.push_back(keys.size());
    reached_by_measure = reached_by_measure || (!graph_.is_field(node) && tree.contains(node));
  }
  if (!reached_by_measure) {
    const std::vector<std::uint64_t> inner = inner_keys(p, *rows_);
    keys.insert(keys.end(), inner.begin(), inner.end());
    runs.push_back(keys.size());
  }
  // Lists already sorted (direct slots, the inner walk's keys) are merged, else all sorted.
  bool sorted_runs = true;
  for (std::size_t i = 1; i < runs.size() && sorted_runs; ++i)
    sorted_runs = std::is_sorted(keys.begin() + static_cast<std::ptrdiff_t>(runs[i - 1]),
                                 keys.begin() + static_cast<std::ptrdiff_t>(runs[i]));
  if (sorted_runs) {
    for (std::size_t i = 2; i < runs.size(); ++i)
      std::inplace_merge(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(runs[i - 1]),
                         keys.begin() + static_cast<std::ptrdiff_t>(runs[i]));
  } else {
    const std::uint64_t top = keys.empty() ? 0 : *std::max_element(keys.begin(), keys.end());
    detail::radix_sort(keys, static_cast<unsigned>(std::bit_width(top)));
  }
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<std::uint64_t> HypercubeBuilder::inner_keys(std::size_t p, const RowStates& rows) const {
  const Part& part = parts_[p];
  std::uint32_t root = detail::kNoNode;
  for (std::size_t d = 0; d < dims_.size() && root == detail::kNoNode; ++d)
    if (part.reached[dims_[d].node]) root = dims_[d].node;
  RootedTree tree(graph_, root, dim_nodes_);
  if (graph_.is_field(root) && !tree.children[root].empty()) tree = RootedTree(graph_, tree.children[root][0], dim_nodes_);
  JoinWalker walker(model_, rows, graph_, tree, part.dims, true);
  std::vector<std::uint64_t> keys = detail::aggregate_node(model_, rows, walker, {}, part.space).keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<std::uint64_t> HypercubeBuilder::tuple_keys(const RowStates& rows) const {
  std::vector<std::uint64_t> out{0};
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const std::vector<std::uint64_t> keys = inner_keys(p, rows);
    std::vector<std::uint64_t> next;
    next.reserve(out.size() * keys.size());
    for (const std::uint64_t b : keys)
      for (const std::uint64_t a : out) next.push_back(a + b * parts_[p].base);
    out.swap(next);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Sorts rows by whole-number keys (NaN last in each column, as sort_rows' order has it), the
// first column's most significant, ties by place: each row's keys as one integer, its place
// below them, radix sorted. False, with `order` as it was, when the keys and places do not fit
// 64 bits.
bool sort_whole_keys(std::vector<std::size_t>& order, const std::vector<const std::vector<double>*>& keys) {
  const std::size_t n_columns = keys.size();
  const std::size_t n = order.size();
  const unsigned place_bits = static_cast<unsigned>(std::bit_width(n));
  std::vector<double> low(n_columns);
  std::vector<std::uint64_t> span(n_columns);  // values, then one more for NaN
  const std::uint64_t limit = std::uint64_t{1} << (64 - place_bits);  // composite keys below it
  std::uint64_t product = 1;
  for (std::size_t c = 0; c < n_columns; ++c) {
    const std::vector<double>& key = *keys[c];
    double lo = 0, hi = -1;
    for (const std::size_t r : order) {
      const double x = key[r];
      if (std::isnan(x)) continue;
      if (hi < lo) {
        lo = hi = x;
      } else {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    if (hi - lo >= 0x1p32) return false;
    low[c] = lo;
    span[c] = (hi < lo ? 0 : static_cast<std::uint64_t>(hi - lo) + 1) + 1;
    if (span[c] > limit / product) return false;
    product *= span[c];
  }
  std::vector<std::uint64_t> tagged(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t k = 0;
    for (std::size_t c = 0; c < n_columns; ++c) {
      const double x = (*keys[c])[order[i]];
      k = k * span[c] + (std::isnan(x) ? span[c] - 1 : static_cast<std::uint64_t>(x - low[c]));
    }
    tagged[i] = k << place_bits | i;
  }
  detail::radix_sort(tagged, static_cast<unsigned>(std::bit_width(product - 1)) + place_bits);
  const std::uint64_t place_mask = (std::uint64_t{1} << place_bits) - 1;
  std::vector<std::size_t> sorted(n);
  for (std::size_t j = 0; j < n; ++j) sorted[j] = order[tagged[j] & place_mask];
  order.swap(sorted);
  return true;
}

}  // namespace

void HypercubeBuilder::sort_rows(std::vector<std::size_t>& order) const {
  const HypercubeSpec& spec = cube_->spec_;
  struct SortColumn {
    std::vector<double> key;  // per row; NaN for None/NULL, which sorts last either way
    bool desc = false;
    bool whole = false;  // a dimension's keys: whole numbers (ranks, or codes in load order)
  };
  std::vector<SortColumn> columns;
  std::vector<std::uint8_t> dim_sorted(dims_.size(), 0);
  auto dim_column = [&](std::size_t d, const std::string& direction) {
    SortColumn c;
    c.key = dim_sort_key(d, direction);
    c.whole = true;
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
  auto before = [&](std::size_t a, std::size_t b) {
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
  };
  // Rows often come in order already (keys follow the symbols, symbols the values).
  if (std::is_sorted(order.begin(), order.end(), before)) return;
  if (std::all_of(columns.begin(), columns.end(), [](const SortColumn& c) { return c.whole; })) {
    std::vector<const std::vector<double>*> keys;
    for (const SortColumn& c : columns) keys.push_back(&c.key);
    if (sort_whole_keys(order, keys)) return;
  }
  if (columns.size() != 1) {
    std::stable_sort(order.begin(), order.end(), before);
    return;
  }
  // One column: its keys beside the rows' positions, sorted in place (ties by position).
  const SortColumn& c = columns[0];
  std::vector<std::pair<double, std::size_t>> tagged;
  tagged.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) tagged.emplace_back(c.key[order[i]], i);
  std::sort(tagged.begin(), tagged.end(), [&](const auto& a, const auto& b) {
    const bool an = std::isnan(a.first), bn = std::isnan(b.first);
    if (an != bn) return bn;
    if (!an && a.first != b.first) return c.desc ? a.first > b.first : a.first < b.first;
    return a.second < b.second;
  });
  std::vector<std::size_t> sorted;
  sorted.reserve(order.size());
  for (const auto& [key, i] : tagged) sorted.push_back(order[i]);
  order.swap(sorted);
}

std::vector<double> HypercubeBuilder::dim_sort_key(std::size_t d, const std::string& direction) const {
  const std::vector<std::uint32_t>& codes = cube_->codes_[d];
  std::vector<double> key;
  if (direction == "load") {
    key.reserve(codes.size());
    for (const std::uint32_t code : codes) key.push_back(code == kNull ? std::nan("") : code);
    return key;
  }
  key = value_ranks(dims_[d].field, codes);
  if (direction == "desc")
    for (double& k : key) k = -k;
  return key;
}

std::string HypercubeBuilder::dim_direction(std::size_t d) const {
  for (const auto& [name, direction] : cube_->spec_.sort)
    if (name == cube_->spec_.dimensions[d]) return lower(direction);
  return "asc";
}

std::vector<double> HypercubeBuilder::value_ranks(std::uint32_t field, const std::vector<std::uint32_t>& codes) const {
  const SymbolTable& symbols = data_.fields()[field].symbols;
  const std::size_t n_symbols = symbols.size();
  // A cube of at least half as many rows as the field has values reads the ranks of all its
  // symbols (made once per model, then kept: later cubes of the field read them too).
  std::shared_ptr<const std::vector<std::uint32_t>> ranks =
      2 * codes.size() >= n_symbols ? model_.value_ranks(field) : model_.value_ranks_found(field);
  std::vector<double> out;
  out.reserve(codes.size());
  if (ranks) {
    // Each row's rank among the values present, as below (so a sort's keys stay as narrow as
    // the values shown): the present values marked at their field ranks, then counted.
    const std::uint32_t* rank = ranks->data();
    std::vector<std::uint64_t> seen((n_symbols + 63) / 64, 0);
    for (const std::uint32_t code : codes)
      if (code < n_symbols) seen[rank[code] >> 6] |= std::uint64_t{1} << (rank[code] & 63);
    std::vector<std::uint32_t> before(seen.size());
    std::uint32_t count = 0;
    for (std::size_t w = 0; w < seen.size(); ++w) {
      before[w] = count;
      count += static_cast<std::uint32_t>(std::popcount(seen[w]));
    }
    for (const std::uint32_t code : codes) {
      if (code >= n_symbols) {
        out.push_back(std::nan(""));
        continue;
      }
      const std::uint32_t r = rank[code];
      const std::uint64_t below = seen[r >> 6] & ((std::uint64_t{1} << (r & 63)) - 1);
      out.push_back(static_cast<double>(before[r >> 6] + static_cast<std::uint32_t>(std::popcount(below))));
    }
    return out;
  }
  // The symbols present: marked in one pass when the field has not many more symbols than
  // there are rows, else the rows' codes sorted.
  const bool marked = n_symbols <= 4 * codes.size() + 1024;
  std::vector<std::uint32_t> present;
  if (marked) {
    std::vector<std::uint8_t> seen(n_symbols, 0);
    for (const std::uint32_t code : codes)
      if (code < n_symbols) seen[code] = 1;
    for (std::uint32_t k = 0; k < n_symbols; ++k)
      if (seen[k]) present.push_back(k);
  } else {
    present = codes;
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
    if (!present.empty() && present.back() == kNull) present.pop_back();
  }
  std::vector<std::uint32_t> by_value(present);
  detail::sort_by_value(symbols, by_value);
  if (marked) {
    std::vector<double> rank_of(n_symbols, 0.0);
    for (std::size_t i = 0; i < by_value.size(); ++i) rank_of[by_value[i]] = static_cast<double>(i);
    for (const std::uint32_t code : codes) out.push_back(code < n_symbols ? rank_of[code] : std::nan(""));
    return out;
  }
  std::vector<double> rank_of_present(present.size());
  for (std::size_t i = 0; i < by_value.size(); ++i) {
    const auto at = std::lower_bound(present.begin(), present.end(), by_value[i]) - present.begin();
    rank_of_present[static_cast<std::size_t>(at)] = static_cast<double>(i);
  }
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

void HypercubeBuilder::apply_order(const std::vector<std::size_t>& order) {
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
