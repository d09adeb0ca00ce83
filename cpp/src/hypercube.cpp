#include "assoc/hypercube.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>

#include "assoc/error.hpp"
#include "assoc/hypercube_aggregate.hpp"
#include "assoc/result_cache.hpp"

namespace assoc {

using detail::DimPlace;
using detail::JoinWalker;
using detail::LinkGraph;
using detail::NodeAggregates;
using detail::RootedTree;
using detail::Term;

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

// Where each aggregation of each measure is computed: the node holding its field, the term there.
struct MeasurePlan {
  Expression expr;
  std::vector<std::pair<std::uint32_t, std::size_t>> aggs;  // per AggCall: node, term index at the node
};

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
  return n;
}

class HypercubeBuilder {
 public:
  HypercubeBuilder(const AssociativeModel& model, const SelectionState& state, const HypercubeSpec& spec,
                   std::shared_ptr<const RowStates> rows)
      : model_(model), data_(model.data()), state_(state), graph_(model), cube_(std::make_shared<Hypercube>()),
        rows_(std::move(rows)) {
    cube_->spec_ = spec;
  }

  std::shared_ptr<Hypercube> run() {
    const HypercubeSpec& spec = cube_->spec_;
    if (spec.dimensions.empty() && spec.measures.empty())
      throw Error("a hypercube needs at least one dimension or measure");
    place_dimensions();
    plan_measures();
    if (!rows_) rows_ = model_.rows(state_);

    std::map<std::uint32_t, NodeAggregates> by_node;
    for (auto& [node, terms] : terms_) {
      const std::size_t p = part_of_node(node);
      const RootedTree tree(graph_, node, dim_nodes_);
      JoinWalker walker(model_, *rows_, graph_, tree, p == kNoPart ? no_dims_ : parts_[p].dims, false);
      by_node.emplace(node, detail::aggregate_node(model_, *rows_, walker, terms, p == kNoPart ? 1 : parts_[p].space));
    }

    std::vector<std::uint64_t> keys = row_keys(by_node);
    if (spec.suppress_missing) std::erase_if(keys, [&](std::uint64_t k) { return has_none(k); });

    // Each aggregation's value per row, then each measure by its arithmetic.
    const std::size_t n_measures = measures_.size();
    cube_->values_.resize(n_measures);
    cube_->only_fields_.assign(n_measures, kNull);
    cube_->only_symbols_.resize(n_measures);
    cube_->totals_.resize(n_measures);
    cube_->total_symbols_.assign(n_measures, kNull);
    for (std::size_t m = 0; m < n_measures; ++m) {
      const MeasurePlan& plan = measures_[m];
      std::vector<std::vector<double>> agg_values(plan.aggs.size(), std::vector<double>(keys.size()));
      std::vector<double> agg_totals(plan.aggs.size());
      std::vector<const double*> value_ptrs, total_ptrs;
      for (std::size_t a = 0; a < plan.aggs.size(); ++a) {
        const auto& [node, term] = plan.aggs[a];
        const NodeAggregates& agg = by_node.at(node);
        const AggFunc func = terms_.at(node)[term].func;
        const bool only = plan.expr.is_single_agg() && func == AggFunc::kOnly;
        if (only) {
          cube_->only_fields_[m] = terms_.at(node)[term].field;
          cube_->only_symbols_[m].assign(keys.size(), kNull);
          cube_->total_symbols_[m] = agg.total_symbols[term];
        }
        const std::size_t p = part_of_node(node);
        const std::uint64_t base = p == kNoPart ? 0 : parts_[p].base, space = p == kNoPart ? 1 : parts_[p].space;
        const bool whole = parts_.size() <= 1 && p != kNoPart;  // the row's key is the part's key
        for (std::size_t r = 0; r < keys.size(); ++r) {
          // A measure reads the row's tuple of its own part's dimensions (key 0 without any).
          auto it = agg.group_of.find(whole ? keys[r] : p == kNoPart ? 0 : keys[r] / base % space);
          if (it == agg.group_of.end()) {
            agg_values[a][r] = detail::empty_value(func);
          } else {
            agg_values[a][r] = agg.values[term][it->second];
            if (only) cube_->only_symbols_[m][r] = agg.symbols[term][it->second];
          }
        }
        agg_totals[a] = agg.totals[term];
        value_ptrs.push_back(agg_values[a].data());
        total_ptrs.push_back(&agg_totals[a]);
      }
      cube_->values_[m] = evaluate_expression(plan.expr, value_ptrs, keys.size());
      cube_->totals_[m] = evaluate_expression(plan.expr, total_ptrs, 1)[0];
    }

    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (spec.suppress_zero && n_measures > 0) {
      std::erase_if(order, [&](std::size_t r) {
        for (std::size_t m = 0; m < n_measures; ++m) {
          const double v = cube_->values_[m][r];
          if (!std::isnan(v) && v != 0) return false;
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

  void plan_measures() {
    for (const std::string& text : cube_->spec_.measures) {
      MeasurePlan plan;
      plan.expr = parse_expression(text);
      for (const AggCall& call : plan.expr.aggs) {
        const int f = data_.find_field(call.field);
        if (f < 0)
          throw Error("expression '" + text + "': unknown field '" + call.field + "' at position " +
                      std::to_string(call.position));
        const auto field = static_cast<std::uint32_t>(f);
        const std::uint32_t node = graph_.node_of_field(field);
        if (graph_.is_field(node) && call.func != AggFunc::kCountDistinct && call.func != AggFunc::kOnly)
          throw Error("expression '" + text + "': " + agg_name(call.func) + " of key field '" + call.field +
                      "' at position " + std::to_string(call.position) +
                      ": a key field allows only Count(distinct …) and Only(…)");
        Term term;
        term.func = call.func;
        term.field = field;
        if (!graph_.is_field(node)) term.column = static_cast<std::uint32_t>(data_.tables()[node].column_of(field));
        auto& terms = terms_[node];
        std::size_t index = 0;
        while (index < terms.size() && !(terms[index].func == term.func && terms[index].field == term.field)) ++index;
        if (index == terms.size()) terms.push_back(term);
        plan.aggs.emplace_back(node, index);
      }
      measures_.push_back(std::move(plan));
    }
  }

  bool has_none(std::uint64_t key) const {
    for (const auto& d : dims_) {
      const std::uint64_t radix = std::uint64_t{data_.fields()[d.field].symbols.size()} + 1;
      if ((key / d.stride) % radix == 0) return true;
    }
    return false;
  }

  // The rows' tuple keys, sorted: the cross product of each part's combinations.
  std::vector<std::uint64_t> row_keys(const std::map<std::uint32_t, NodeAggregates>& by_node) const {
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
  std::vector<std::uint64_t> part_keys(std::size_t p, const std::map<std::uint32_t, NodeAggregates>& by_node) const {
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
    for (const auto& [node, agg] : by_node) {
      if (!part.reached[node]) continue;
      keys.insert(keys.end(), agg.keys.begin(), agg.keys.end());
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
  std::map<std::uint32_t, std::vector<Term>> terms_;  // per node, the aggregations it computes
  std::vector<MeasurePlan> measures_;
};

std::shared_ptr<const Hypercube> hypercube(const AssociativeModel& model, const SelectionState& state,
                                           const HypercubeSpec& spec, std::shared_ptr<const RowStates> rows) {
  CacheKey key{&model, kHypercubeCacheKind, 0, state.encode()};
  key.state.push_back(0xFFFFFFFFU);
  const std::vector<std::uint32_t> encoded = spec.encode();
  key.state.insert(key.state.end(), encoded.begin(), encoded.end());
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return std::static_pointer_cast<const Hypercube>(hit);
  std::shared_ptr<const Hypercube> computed = HypercubeBuilder(model, state, spec, std::move(rows)).run();
  const std::size_t bytes = computed->byte_size();
  cache.insert(std::move(key), model.weak_from_this(), computed, bytes);
  return computed;
}

}  // namespace assoc
