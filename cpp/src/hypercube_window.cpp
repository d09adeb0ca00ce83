// Inter-record functions (Above, Below, Top, Bottom, RowNo, NoOfRows, Rank, HRank, Column and the
// Range functions over them): planned with the measure, computed on the sorted rows.
#include <algorithm>
#include <cmath>
#include <map>

#include "assoc/error.hpp"
#include "hypercube_builder.hpp"

namespace assoc {

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

void HypercubeBuilder::window_measure(std::size_t m, std::vector<std::vector<Value>>& columns,
                                      std::vector<Value>& totals, const std::vector<std::size_t>& order) {
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
        out[order[pos]] = call_scalar(*w.range, args, data_.interpretation());
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
      case InterRecordKind::kHRank:
        hrank(w, arg_column(w, eval_at, order), order, out);
        break;
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

template <typename Eval>
std::vector<Value> HypercubeBuilder::arg_column(const Window& w, Eval& eval_at, const std::vector<std::size_t>& order) {
  std::vector<Value> a(order.empty() ? 0 : *std::max_element(order.begin(), order.end()) + 1);
  for (const std::size_t r : order) a[r] = eval_at(w.arg, r);
  return a;
}

Value HypercubeBuilder::shifted(const Window& w, const std::vector<Value>& a, const std::vector<std::size_t>& order,
                                std::size_t pos, std::int64_t c, const std::vector<std::size_t>& seg_first,
                                const std::vector<std::size_t>& seg_last) {
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

void HypercubeBuilder::hrank(const Window& w, const std::vector<Value>& a, const std::vector<std::size_t>& order,
                             std::vector<Value>& out) const {
  const HypercubeSpec& spec = cube_->spec_;
  if (!spec.pivot) {
    for (const std::size_t r : order) out[r] = Value::null();
    return;
  }
  // A row segment: the cells sharing the left dimensions and every top one but the last (with
  // TOTAL, the left ones alone), in the order of the pivot's columns.
  std::vector<std::uint8_t> in_key(dims_.size(), 1);
  for (const std::uint32_t t : spec.pivot_top) in_key[t] = 0;
  if (!w.total && !spec.pivot_top.empty())
    for (std::size_t i = 0; i + 1 < spec.pivot_top.size(); ++i) in_key[spec.pivot_top[i]] = 1;
  std::map<std::vector<std::uint32_t>, std::vector<std::size_t>> segments;
  std::vector<std::uint32_t> key;
  for (const std::size_t r : order) {
    key.clear();
    for (std::size_t d = 0; d < dims_.size(); ++d)
      if (in_key[d]) key.push_back(cube_->codes_[d][r]);
    segments[key].push_back(r);
  }
  std::vector<double> xs, ranks;
  std::vector<std::string> texts;
  std::vector<std::uint8_t> has;
  for (const auto& [k, rows] : segments) {
    const std::size_t n = rows.size();
    xs.resize(n);
    ranks.assign(n, 0);
    texts.assign(n, std::string());
    has.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) xs[i] = a[rows[i]].num;
    rank_segment(xs.data(), n, w.mode, w.fmt, ranks.data(), texts.data(), has.data());
    for (std::size_t i = 0; i < n; ++i)
      out[rows[i]] = has[i] ? Value::dual(ranks[i], texts[i]) : Value::number(ranks[i]);
  }
}

bool HypercubeBuilder::same_segment(std::size_t a, std::size_t b) const {
  for (std::size_t d = 0; d + 1 < dims_.size(); ++d)
    if (cube_->codes_[d][a] != cube_->codes_[d][b]) return false;
  return true;
}

}  // namespace assoc
