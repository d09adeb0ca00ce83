// Inter-record functions (Above, Below, Top, Bottom, RowNo, NoOfRows, Rank, Column; across a
// pivot's columns Before, After, First, Last, ColumnNo, NoOfColumns, HRank; and the Range
// functions over them): planned with the measure, computed on the sorted rows per segment.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <span>

#include "assoc/error.hpp"
#include "hypercube_builder.hpp"

namespace assoc {
namespace {

const Value kNullValue;

// Where a shift reads its first value in segment order (Segments::rows), and which way its
// further values lie: Above/Before upward from offset rows up, Below/After downward, Top/First
// downward from the first row, Bottom/Last upward from the last.
std::int64_t shift_start(const Window& w, const Segments& s, std::size_t pos) {
  const auto p = static_cast<std::int64_t>(s.at[pos]);
  switch (w.kind) {
    case InterRecordKind::kAbove:
    case InterRecordKind::kBefore: return p - w.offset;
    case InterRecordKind::kBelow:
    case InterRecordKind::kAfter: return p + w.offset;
    case InterRecordKind::kTop:
    case InterRecordKind::kFirst: return static_cast<std::int64_t>(s.first[pos]) + std::max<std::int64_t>(w.offset, 1) - 1;
    default: return static_cast<std::int64_t>(s.last[pos]) - std::max<std::int64_t>(w.offset, 1);
  }
}

std::int64_t shift_step(InterRecordKind kind) {
  return kind == InterRecordKind::kAbove || kind == InterRecordKind::kBefore || kind == InterRecordKind::kBottom ||
                 kind == InterRecordKind::kLast
             ? -1
             : 1;
}

// dst = src, reusing dst's text buffer (most values have no text).
void copy_value(Value& dst, const Value& src) {
  dst.num = src.num;
  dst.has_text = src.has_text;
  if (src.has_text)
    dst.text = src.text;
  else
    dst.text.clear();
}

}  // namespace

Window HypercubeBuilder::plan_window(const std::string& text, const Expression& e, std::uint32_t n, MeasurePlan& plan,
                                     bool in_range) {
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
  if (is_shift(w.kind)) {  // Above, Below, Top, Bottom and their horizontal counterparts
    w.arg = bind_measure(text, e, x.args[0], plan, true);
    w.offset = w.kind == InterRecordKind::kAbove || w.kind == InterRecordKind::kBelow ||
                       w.kind == InterRecordKind::kBefore || w.kind == InterRecordKind::kAfter
                   ? 1
                   : 0;
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
  }
  switch (w.kind) {
    case InterRecordKind::kRank:
    case InterRecordKind::kHRank:
      w.arg = bind_measure(text, e, x.args[0], plan, true);
      if (x.args.size() > 1) w.mode = static_cast<int>(constant_arg(text, e, x.args[1], "the mode of " + name));
      if (x.args.size() > 2) w.fmt = static_cast<int>(constant_arg(text, e, x.args[2], "the format of " + name));
      if (w.mode < 0 || w.mode > 4) fail(text, e.nodes[x.args[1]].position, "the mode of " + name + " is 0 to 4");
      if (w.fmt < 0 || w.fmt > 2) fail(text, e.nodes[x.args[2]].position, "the format of " + name + " is 0 to 2");
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

Value HypercubeBuilder::measure_value(std::size_t m, std::size_t r) const {
  if (cube_->only_fields_[m] != kNull)
    return symbol_value(data_.fields()[cube_->only_fields_[m]].symbols, cube_->only_symbols_[m][r]);
  if (!cube_->text_flags_[m].empty() && cube_->text_flags_[m][r]) return Value::dual(cube_->values_[m][r], cube_->texts_[m][r]);
  return Value::number(cube_->values_[m][r]);
}

const Value* HypercubeBuilder::shifted(const Window& w, const std::vector<Value>& a, const std::vector<std::size_t>& order,
                                       const Segments& s, std::size_t pos, std::int64_t c) {
  if (s.none) return nullptr;
  const std::int64_t at = shift_start(w, s, pos) + shift_step(w.kind) * c;
  if (at < static_cast<std::int64_t>(s.first[pos]) || at >= static_cast<std::int64_t>(s.last[pos])) return nullptr;
  return &a[order[s.rows[static_cast<std::size_t>(at)]]];
}

void HypercubeBuilder::window_measure(std::size_t m, std::vector<std::vector<Value>>& columns,
                                      std::vector<Value>& totals, const std::vector<std::size_t>& order) {
  const MeasurePlan& plan = measures_[m];
  const std::size_t n = order.size();
  // The segments each function reads, by direction and TOTAL, computed once per measure.
  std::map<int, Segments> cache;
  auto segments_of = [&](const Window& w) -> const Segments& {
    const bool horizontal = is_horizontal(w.kind);
    const int k = (horizontal ? 2 : 0) + (w.total ? 1 : 0);
    auto it = cache.find(k);
    if (it == cache.end()) it = cache.emplace(k, segments(horizontal, w.total, order)).first;
    return it->second;
  };
  std::vector<Value> row(plan.inputs.size());
  auto eval_at = [&](const Plan& p, std::size_t r) {
    for (std::size_t i = 0; i < row.size(); ++i) copy_value(row[i], columns[i][r]);
    return p.eval(row.data());
  };
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    if (plan.inputs[i].window < 0) continue;
    const Window& w = plan.windows[static_cast<std::size_t>(plan.inputs[i].window)];
    std::vector<Value>& out = columns[i];
    if (w.range != nullptr) {
      // Each part's argument once per row, then per row the Range function over the values
      // its parts read (in a reused argument list: no allocation per row).
      std::vector<std::vector<Value>> storage(w.parts.size());
      std::vector<const std::vector<Value>*> part_args(w.parts.size());
      std::vector<const Segments*> part_segments(w.parts.size());
      for (std::size_t k = 0; k < w.parts.size(); ++k) {
        part_args[k] = &arg_column(w.parts[k], eval_at, order, columns, storage[k]);
        part_segments[k] = &segments_of(w.parts[k]);
      }
      std::vector<Value> args;
      std::size_t n_args = 0;
      auto next_arg = [&]() -> Value& {
        if (n_args == args.size()) args.emplace_back();
        return args[n_args++];
      };
      for (std::size_t pos = 0; pos < n; ++pos) {
        n_args = 0;
        for (const std::int32_t a : w.range_windows) {
          if (a < 0) {
            next_arg() = eval_at(w.range_plans[static_cast<std::size_t>(-1 - a)], order[pos]);
            continue;
          }
          const auto k = static_cast<std::size_t>(a);
          const Window& part = w.parts[k];
          std::int64_t count = part.count;
          if (part.dynamic_count) {
            const double c = numeric_of(eval_at(part.count_plan, order[pos]));
            count = std::isnan(c) ? 0 : static_cast<std::int64_t>(std::clamp(c, 0.0, 1e6));
          }
          const Segments& seg = *part_segments[k];
          const std::vector<Value>& values = *part_args[k];
          if (seg.none) {
            for (std::int64_t c = 0; c < count; ++c) copy_value(next_arg(), kNullValue);
            continue;
          }
          const auto first = static_cast<std::int64_t>(seg.first[pos]), last = static_cast<std::int64_t>(seg.last[pos]);
          const std::int64_t step = shift_step(part.kind);
          std::int64_t at = shift_start(part, seg, pos);
          for (std::int64_t c = 0; c < count; ++c, at += step)
            copy_value(next_arg(), at >= first && at < last ? values[order[seg.rows[static_cast<std::size_t>(at)]]] : kNullValue);
        }
        out[order[pos]] = call_scalar(*w.range, std::span<const Value>(args.data(), n_args), data_.interpretation());
      }
      continue;
    }
    if (w.kind == InterRecordKind::kColumn) {
      if (w.column >= m && !measures_[w.column].windows.empty())
        throw Error("expression '" + plan.expr.text + "': Column(" + std::to_string(w.column + 1) +
                    ") reads a later measure that uses inter-record functions");
      for (std::size_t pos = 0; pos < n; ++pos) out[order[pos]] = measure_value(w.column, order[pos]);
      continue;
    }
    const Segments& seg = segments_of(w);
    if (seg.none) {
      for (std::size_t pos = 0; pos < n; ++pos) out[order[pos]] = Value::null();
      continue;
    }
    switch (w.kind) {
      case InterRecordKind::kRowNo:
      case InterRecordKind::kColumnNo:
        for (std::size_t pos = 0; pos < n; ++pos)
          out[order[pos]] = Value::number(static_cast<double>(seg.at[pos] - seg.first[pos] + 1));
        break;
      case InterRecordKind::kNoOfRows:
      case InterRecordKind::kNoOfColumns:
        for (std::size_t pos = 0; pos < n; ++pos)
          out[order[pos]] = Value::number(static_cast<double>(seg.last[pos] - seg.first[pos]));
        break;
      case InterRecordKind::kRank:
      case InterRecordKind::kHRank: {
        std::vector<Value> storage;
        const std::vector<Value>& a = arg_column(w, eval_at, order, columns, storage);
        // Values in segment order (seg.rows), ranked segment by segment.
        std::vector<double> xs(n), ranks(n);
        std::vector<std::string> texts(n);
        std::vector<std::uint8_t> has(n);
        for (std::size_t j = 0; j < n; ++j) xs[j] = a[order[seg.rows[j]]].num;
        for (std::size_t j = 0; j < n;) {
          const std::size_t first = j, last = seg.last[seg.rows[j]];
          rank_segment(xs.data() + first, last - first, w.mode, w.fmt, ranks.data() + first, texts.data() + first,
                       has.data() + first);
          j = last;
        }
        for (std::size_t j = 0; j < n; ++j)
          out[order[seg.rows[j]]] = has[j] ? Value::dual(ranks[j], texts[j]) : Value::number(ranks[j]);
        break;
      }
      default: {
        std::vector<Value> storage;
        const std::vector<Value>& a = arg_column(w, eval_at, order, columns, storage);
        for (std::size_t pos = 0; pos < n; ++pos) {
          const Value* v = shifted(w, a, order, seg, pos, 0);
          out[order[pos]] = v != nullptr ? *v : Value::null();
        }
        break;
      }
    }
  }
  store_values(
      m, cube_->values_[m].size(), order, [&](std::size_t r) { return eval_at(plan.plan, r); },
      plan.plan.eval(totals.data()));
}

template <typename Eval>
const std::vector<Value>& HypercubeBuilder::arg_column(const Window& w, Eval& eval_at, const std::vector<std::size_t>& order,
                                                       const std::vector<std::vector<Value>>& columns,
                                                       std::vector<Value>& storage) {
  // An argument that is one input (Above(Sum(X))) is that input's column, as computed.
  const std::int64_t single = w.arg.single_input();
  if (single >= 0) return columns[static_cast<std::size_t>(single)];
  storage.assign(order.empty() ? 0 : *std::max_element(order.begin(), order.end()) + 1, Value::null());
  for (const std::size_t r : order) storage[r] = eval_at(w.arg, r);
  return storage;
}

Segments HypercubeBuilder::segments(bool horizontal, bool total, const std::vector<std::size_t>& order) const {
  const HypercubeSpec& spec = cube_->spec_;
  const std::size_t n = order.size();
  Segments s;
  if (!spec.pivot && horizontal) {
    s.none = true;
    return s;
  }
  s.rows.resize(n);
  std::iota(s.rows.begin(), s.rows.end(), std::size_t{0});
  s.first.resize(n);
  s.last.resize(n);
  if (!spec.pivot) {  // a straight table: runs of rows sharing every dimension but the last
    s.at = s.rows;
    const std::vector<const std::vector<std::uint32_t>*> key = segment_key();
    const auto same = [&](std::size_t a, std::size_t b) {
      return std::all_of(key.begin(), key.end(), [&](const auto* codes) { return (*codes)[a] == (*codes)[b]; });
    };
    for (std::size_t i = 0; i < n;) {
      std::size_t end = total ? n : i + 1;
      while (end < n && same(order[i], order[end])) ++end;
      for (std::size_t j = i; j < end; ++j) s.first[j] = i, s.last[j] = end;
      i = end;
    }
    return s;
  }
  // A pivot: the dimensions a segment shares. Down a column: every top one, and the left ones
  // but the last (TOTAL: the top ones alone). Across a row: every left one, and the top ones
  // but the last (TOTAL: the left ones alone).
  std::vector<std::uint8_t> top(dims_.size(), 0);
  for (const std::uint32_t t : spec.pivot_top) top[t] = 1;
  std::vector<std::size_t> left;
  for (std::size_t d = 0; d < dims_.size(); ++d)
    if (!top[d]) left.push_back(d);
  const std::vector<std::size_t> top_dims(spec.pivot_top.begin(), spec.pivot_top.end());
  const std::vector<std::size_t>& along = horizontal ? top_dims : left;  // outer first
  std::vector<const std::vector<std::uint32_t>*> key;
  for (const std::size_t d : horizontal ? left : top_dims) key.push_back(&cube_->codes_[d]);
  if (!total)
    for (std::size_t i = 0; i + 1 < along.size(); ++i) key.push_back(&cube_->codes_[along[i]]);
  auto same = [&](std::size_t x, std::size_t y) {
    return std::all_of(key.begin(), key.end(), [&](const auto* codes) { return (*codes)[order[x]] == (*codes)[order[y]]; });
  };
  // Display positions grouped by their key, each group in the pivot's order along the
  // segment (its dimensions outer first, each in its own sort order), then in display order.
  std::vector<std::vector<double>> sort_keys;
  for (const std::size_t d : along) sort_keys.push_back(dim_sort_key(d, dim_direction(d)));
  std::stable_sort(s.rows.begin(), s.rows.end(), [&](std::size_t x, std::size_t y) {
    for (const auto* codes : key) {
      const std::uint32_t a = (*codes)[order[x]], b = (*codes)[order[y]];
      if (a != b) return a < b;
    }
    for (const std::vector<double>& k : sort_keys) {
      const double a = k[order[x]], b = k[order[y]];
      const bool an = std::isnan(a), bn = std::isnan(b);
      if (an || bn) {
        if (an != bn) return bn;
        continue;
      }
      if (a != b) return a < b;
    }
    return false;
  });
  s.at.resize(n);
  for (std::size_t j = 0; j < n;) {
    std::size_t end = j + 1;
    while (end < n && same(s.rows[j], s.rows[end])) ++end;
    for (std::size_t i = j; i < end; ++i) {
      s.at[s.rows[i]] = i;
      s.first[s.rows[i]] = j;
      s.last[s.rows[i]] = end;
    }
    j = end;
  }
  return s;
}

std::vector<const std::vector<std::uint32_t>*> HypercubeBuilder::segment_key() const {
  // The dimensions in the inter-field sort order: those the sort names, in its order, then the
  // others in their own order (as sort_rows ranks them); every one but the last.
  const HypercubeSpec& spec = cube_->spec_;
  std::vector<std::size_t> ranked;
  std::vector<std::uint8_t> seen(dims_.size(), 0);
  for (const auto& sorted : spec.sort)
    for (std::size_t d = 0; d < dims_.size(); ++d)
      if (spec.dimensions[d] == sorted.first) {
        if (!seen[d]) ranked.push_back(d);
        seen[d] = 1;
        break;
      }
  for (std::size_t d = 0; d < dims_.size(); ++d)
    if (!seen[d]) ranked.push_back(d);
  std::vector<const std::vector<std::uint32_t>*> key;
  for (std::size_t i = 0; i + 1 < ranked.size(); ++i) key.push_back(&cube_->codes_[ranked[i]]);
  return key;
}

}  // namespace assoc
